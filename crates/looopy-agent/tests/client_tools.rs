//! A turn that ended input-required continues with the client's results.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::{AgentError, LifecycleState, TurnEnd, open_tool_calls};
use looopy_core::{History, LlmResponse, ResultSource, Role, TaskState, ToolCall};
use looopy_testkit::ScriptedLlm;
use serde_json::json;
use support::*;

fn asks_the_client() -> LlmResponse {
    LlmResponse::tool_calls(
        "",
        vec![
            ToolCall::new("s1", "lookup", "{}"),
            ToolCall::new("c1", "client", r#"{"precise":true}"#),
        ],
    )
}

#[tokio::test]
async fn client_results_in_the_next_message_continue_where_the_model_stopped() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(asks_the_client())
        .respond(LlmResponse::text("You are in Oslo."));
    let agent = tool_agent("c-client", &llm, &stores);
    let (events, s) = turn(&agent, "Where am I?").await;
    assert_eq!(s.state, TaskState::InputRequired);
    assert_eq!(s.end, TurnEnd::InputRequired);
    let pending: Vec<&str> = s.pending_tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(pending, vec!["c1"]);
    assert_eq!(final_metadata(&events)["pendingToolCalls"][0]["id"], "c1");
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
    let stored = stores.messages.load("c-client").await.unwrap();
    assert_eq!(stored.len(), 3, "user, call, server tool result");
    let open: Vec<String> = open_tool_calls(&History::from(stored))
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(open, vec!["c1"]);

    // The client answers with a data part only.
    let answer = client_answer("c1", json!({"city": "Oslo"}));
    let s = send(&agent, answer).await;
    assert_eq!(s.state, TaskState::Completed);
    let request = llm.requests().pop().unwrap();
    let sent = request.messages.to_vec();
    assert_eq!(sent.len(), 4, "no user message added: the model continues");
    assert_eq!(sent[3].role, Role::Tool);
    assert_eq!(sent[3].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(sent[3].text(), r#"{"city":"Oslo"}"#);
    assert_tool_pairs_intact(&sent);
    let stored = stores.messages.load("c-client").await.unwrap();
    assert_eq!(stored.len(), 5);
    assert_eq!(stored[3].source, Some(ResultSource::Client));
    assert_eq!(stored[4].text(), "You are in Oslo.");
    assert_tool_pairs_intact(&stored);
}

#[tokio::test]
async fn a_plain_message_after_input_required_closes_the_open_call() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(asks_the_client())
        .respond(LlmResponse::text("Fine, never mind."));
    let agent = tool_agent("c-client-skip", &llm, &stores);
    turn(&agent, "Where am I?").await;
    turn(&agent, "Forget it, tell me a joke").await;
    let sent = llm.requests().pop().unwrap().messages.to_vec();
    assert_eq!(sent.len(), 5);
    assert!(
        sent[3].is_error(),
        "the unanswered call gets an error result"
    );
    assert_eq!(sent[4].text(), "Forget it, tell me a joke");
    assert_tool_pairs_intact(&sent);
}

#[tokio::test]
async fn results_for_unknown_calls_are_refused_and_nothing_is_written() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(asks_the_client());
    let agent = tool_agent("c-client-bad", &llm, &stores);
    turn(&agent, "Where am I?").await;
    let wrong = client_answer("nope", json!(1));
    let e = agent.execute_turn(Some(wrong), None).await.unwrap_err();
    assert_eq!(
        e,
        AgentError::UnknownToolCall {
            tool_call_id: "nope".into()
        }
    );
    assert_eq!(stores.messages.count("c-client-bad").await.unwrap(), 3);
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
}
