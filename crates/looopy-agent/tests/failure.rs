//! Turns that fail, are cancelled or lose their reader keep what they made.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::{LifecycleState, TurnEnd, TurnOptions};
use looopy_core::{
    CancellationToken, EventPayload, LlmError, LlmResponse, Message, Role, TaskState,
};
use looopy_testkit::ScriptedLlm;
use support::*;

#[tokio::test]
async fn an_llm_error_mid_turn_keeps_the_tool_results_and_the_next_turn_runs() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["a"]))
        .fail(LlmError::Server {
            retry_after: None,
            status: 503,
            message: "overloaded".into(),
        })
        .respond(LlmResponse::text("recovered"));
    // Without the loop's default retry, which would try the 503 again.
    let agent = builder("c-err", &llm, &stores)
        .tools(TestTools::default())
        .configure_loop(|l| l.retry(looopy_loop::layers::RetryPolicy::none()))
        .build()
        .unwrap();
    let (events, s) = turn(&agent, "look it up").await;
    assert_eq!(s.state, TaskState::Failed);
    assert_eq!(s.end, TurnEnd::Error);
    assert!(s.saved);
    let meta = final_metadata(&events);
    assert_eq!(meta["finishReason"], "error");
    assert!(
        meta["error"]["message"]
            .as_str()
            .unwrap()
            .contains("overloaded")
    );

    let stored = stores.messages.load("c-err").await.unwrap();
    assert_eq!(
        roles(&stored),
        vec![Role::User, Role::Assistant, Role::Tool],
        "the tool result made before the error is kept"
    );
    assert_eq!(stored[2].text(), "result of a");
    assert_tool_pairs_intact(&stored);
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
    let state = stores.agents.load("c-err").await.unwrap().unwrap();
    assert_eq!(state.turn_count, 1);
    assert_eq!(state.last_turn.as_ref().unwrap().state, TaskState::Failed);

    // Retry: continue without a new message.
    let s = agent
        .execute_turn(None, None)
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(s.state, TaskState::Completed);
    let last = llm.requests().pop().unwrap();
    assert_eq!(last.messages.len(), 3);
    assert_eq!(stores.messages.count("c-err").await.unwrap(), 4);
}

#[tokio::test]
async fn cancelling_keeps_finished_tool_results_and_closes_the_others() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(LlmResponse::tool_calls(
        "Let me check two things.",
        vec![
            looopy_core::ToolCall::new("fast", "lookup", "{}"),
            looopy_core::ToolCall::new("stuck", "slow", "{}"),
        ],
    ));
    let agent = tool_agent("c-cancel", &llm, &stores);
    let token = CancellationToken::new();
    let mut t = start_turn(&agent, "go", TurnOptions::new().with_cancel(token.clone())).await;
    until(&mut t, |e| {
        matches!(&*e.payload, EventPayload::ToolComplete { result, .. } if result.tool_call_id == "fast")
    })
    .await;
    token.cancel();
    let (events, s) = t.collect_all().await;
    let s = s.unwrap();
    assert_eq!(s.state, TaskState::Canceled);
    assert_eq!(final_metadata(&events)["finishReason"], "cancelled");
    assert_eq!(s.end, TurnEnd::Cancelled);

    let stored = stores.messages.load("c-cancel").await.unwrap();
    assert_eq!(
        roles(&stored),
        vec![Role::User, Role::Assistant, Role::Tool, Role::Tool]
    );
    assert_tool_pairs_intact(&stored);
    assert_eq!(stored[2].tool_call_id.as_deref(), Some("fast"));
    assert_eq!(stored[2].text(), "result of fast");
    assert_eq!(stored[3].tool_call_id.as_deref(), Some("stuck"));
    assert!(stored[3].is_error());
    // The call still running when the turn was cancelled: the loop's result.
    assert_eq!(
        stored[3].tool_failure(),
        Some(looopy_core::ToolFailure::Cancelled)
    );
    assert!(stored[3].text().contains("cancelled"));
    let new: Vec<Message> = s.new_messages.iter().map(|m| Message::clone(m)).collect();
    assert_eq!(new, stored);
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_turn_and_still_saves_it() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("slow", &["s1"]))
        .respond(LlmResponse::text("next turn"));
    let agent = tool_agent("c-drop", &llm, &stores);
    let mut t = agent
        .execute_turn(Some(Message::user("start")), None)
        .await
        .unwrap();
    until(&mut t, is_tool_start).await;
    drop(t);
    wait_ready(&agent).await;
    assert_saved_cancelled_in_tool(&stores, "c-drop").await;
    let (_, s) = turn(&agent, "again").await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(llm.requests()[1].messages.len(), 4);
}

#[tokio::test]
async fn a_turn_kept_running_after_its_stream_is_dropped_finishes_and_saves() {
    let stores = looopy_stores_memory::stores();
    let llm = lookup_then_done();
    let agent = tool_agent("c-detach", &llm, &stores);
    let t = start_turn(&agent, "go", TurnOptions::new().keep_running_on_drop(true)).await;
    drop(t);
    wait_ready(&agent).await;
    assert_saved_lookup_then_done(&stores, "c-detach").await;
}

#[tokio::test]
async fn a_caller_token_cancels_only_the_turn() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(call("slow", &["s"]));
    let agent = tool_agent("c-token", &llm, &stores);
    let parent = CancellationToken::new();
    let mut t = start_turn(&agent, "x", TurnOptions::new().with_cancel(parent.clone())).await;
    until(&mut t, is_tool_start).await;
    t.cancel();
    let s = t.finish().await.unwrap();
    assert_eq!(s.end, TurnEnd::Cancelled);
    assert!(!parent.is_cancelled(), "the caller's token is untouched");
}
