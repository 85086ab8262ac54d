//! `RemoteAgentTools`: an AgentLoop calls a second A2A server as a tool.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_a2a::{A2aClient, RemoteAgentTools};
use looopy_core::{LlmResponse, Message, Role, TaskState, ToolCall, ToolProvider, TurnContext};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;
use support::*;

fn ask(id: &str, message: &str) -> LlmResponse {
    LlmResponse::tool_calls(
        "",
        vec![ToolCall::new(
            id,
            "weather_agent",
            serde_json::json!({"message": message}).to_string(),
        )],
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_loop_asks_a_remote_agent() {
    let (remote, remote_llm) = agent_server(&["It is sunny in Paris.", "Still sunny."]).await;
    let tool = RemoteAgentTools::from_card(A2aClient::new(&remote.url))
        .await
        .unwrap()
        .with_name("weather_agent");
    let defs = tool.tools(&TurnContext::new("t", "c")).await.unwrap();
    assert_eq!(defs[0].name, "weather_agent");
    assert!(defs[0].description.contains("Test agent"));
    assert_eq!(defs[0].parameters["required"][0], "message");

    let llm = ScriptedLlm::new()
        .respond(ask("c1", "Weather in Paris?"))
        .respond(LlmResponse::text("The weather agent says it is sunny."))
        .respond(ask("c2", "And now?"))
        .respond(LlmResponse::text("Still sunny."));
    let agent = AgentLoop::builder(llm.clone()).tools(tool).build();

    let (events, outcome) = agent
        .start_turn(
            vec![Message::user("What's the weather in Paris?")].into(),
            TurnContext::new("local-1", "ctx-1"),
        )
        .collect_all()
        .await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.state, TaskState::Completed, "{events:#?}");
    let tool_msg = llm.requests()[1]
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .cloned()
        .unwrap();
    assert_eq!(tool_msg.text(), "It is sunny in Paris.");
    assert!(!tool_msg.is_error());

    // A second turn of the same local conversation continues the remote one.
    let mut history = outcome.history.clone();
    history.push(Message::user("And now?"));
    let (_, outcome) = agent
        .start_turn(history, TurnContext::new("local-2", "ctx-1"))
        .collect_all()
        .await;
    assert_eq!(outcome.unwrap().state, TaskState::Completed);
    let remote_seen = &remote_llm.requests()[1].messages;
    assert_eq!(
        remote_seen.len(),
        3,
        "the remote agent saw its first exchange: {remote_seen:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_become_error_results() {
    let cx = TurnContext::new("t", "c");
    // Unreachable.
    let dead = RemoteAgentTools::new(A2aClient::new("http://127.0.0.1:9"), "remote", "x");
    let r = dead
        .execute(&ToolCall::new("1", "remote", r#"{"message":"hi"}"#), &cx)
        .await;
    assert!(r.is_error);
    assert!(
        r.text_content().contains("could not be reached"),
        "{}",
        r.text_content()
    );
    // Bad arguments.
    let r = dead
        .execute(&ToolCall::new("2", "remote", r#"{"msg":"hi"}"#), &cx)
        .await;
    assert!(r.is_error);
    assert!(r.text_content().contains("message"));
    // A remote turn that fails.
    let server = start(ScriptedRunner::new(vec![vec![
        working(),
        finish(TaskState::Failed, "the model is down"),
    ]]))
    .await;
    let tool = RemoteAgentTools::new(A2aClient::new(&server.url), "remote", "x");
    let r = tool
        .execute(&ToolCall::new("3", "remote", r#"{"message":"hi"}"#), &cx)
        .await;
    assert!(r.is_error);
    assert!(
        r.text_content().contains("failed: the model is down"),
        "{}",
        r.text_content()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_from_the_remote_agent_is_answered_by_the_next_call() {
    let server = start(ScriptedRunner::new(vec![
        vec![working(), finish(TaskState::InputRequired, "Which city?")],
        vec![working(), finish(TaskState::Completed, "Sunny in Oslo.")],
    ]))
    .await;
    let tool = RemoteAgentTools::new(A2aClient::new(&server.url), "weather", "x");
    let cx = TurnContext::new("t", "c");
    let r = tool
        .execute(
            &ToolCall::new("1", "weather", r#"{"message":"weather?"}"#),
            &cx,
        )
        .await;
    assert!(!r.is_error);
    assert!(r.text_content().starts_with("Which city?"));
    assert!(r.text_content().contains("needs more input"));
    let r = tool
        .execute(&ToolCall::new("2", "weather", r#"{"message":"Oslo"}"#), &cx)
        .await;
    assert_eq!(r.text_content(), "Sunny in Oslo.");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_local_turn_cancels_the_remote_task() {
    let runner = ScriptedRunner::new(vec![vec![working(), Step::UntilCancelled]]);
    let server = start(runner).await;
    let tool = Arc::new(RemoteAgentTools::new(
        A2aClient::new(&server.url),
        "slow",
        "x",
    ));
    let cx = TurnContext::new("t", "c");
    let cancel = cx.cancel.clone();
    let call = tokio::spawn({
        let tool = tool.clone();
        let cx = cx.clone();
        async move {
            tool.execute(&ToolCall::new("1", "slow", r#"{"message":"go"}"#), &cx)
                .await
        }
    });
    // Wait until the remote task runs, then cancel the local turn.
    eventually(async || states(&server).await.contains(&TaskState::Working)).await;
    cancel.cancel();
    let r = call.await.unwrap();
    assert!(r.is_error);
    eventually(async || {
        let states = states(&server).await;
        states.iter().all(|s| *s == TaskState::Canceled)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_before_the_remote_task_id_is_read_still_cancels_the_remote_task() {
    // Cancelled before the call: the request still goes out and the remote
    // task exists, but the cancel is seen before the stream's first event,
    // which carries the task's id. The tool reads it and cancels the task.
    let runner = ScriptedRunner::new(vec![vec![working(), Step::UntilCancelled]]);
    let server = start(runner).await;
    let tool = RemoteAgentTools::new(A2aClient::new(&server.url), "slow", "x");
    let cx = TurnContext::new("t", "c");
    cx.cancel.cancel();
    let r = tool
        .execute(&ToolCall::new("1", "slow", r#"{"message":"go"}"#), &cx)
        .await;
    assert!(r.is_error);
    assert_eq!(states(&server).await.len(), 1, "the remote task was made");
    eventually(async || states(&server).await == [TaskState::Canceled]).await;
}

/// The states of the server's tasks (the first ten).
async fn states(server: &TestServer) -> Vec<TaskState> {
    use looopy_core::store::TaskRecordStore;
    let records = server.tasks.list(None, None, 10).await.unwrap();
    records.into_iter().map(|r| r.status.state).collect()
}
