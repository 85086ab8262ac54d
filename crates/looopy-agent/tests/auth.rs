//! A fresh AuthContext per turn reaches every tool call of that turn.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::TurnOptions;
use looopy_core::{AuthContext, LlmResponse, Message, TaskState};
use looopy_testkit::ScriptedLlm;
use support::*;

#[tokio::test]
async fn every_tool_call_of_a_turn_sees_that_turns_auth() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["a1", "a2"]))
        .respond(LlmResponse::text("turn 1 done"))
        .respond(call("lookup", &["b1"]))
        .respond(LlmResponse::text("turn 2 done"))
        .respond(call("lookup", &["c1"]))
        .respond(LlmResponse::text("turn 3 done"));
    let tools = TestTools::default();
    let agent = builder("c-auth", &llm, &stores)
        .tools(tools.clone())
        .build()
        .unwrap();

    let t = agent
        .execute_turn(
            Some(Message::user("one")),
            Some(AuthContext::new("alice").with_credentials("token-1")),
        )
        .await
        .unwrap();
    assert_eq!(t.finish().await.unwrap().state, TaskState::Completed);
    // The token was refreshed between turns.
    let t = agent
        .execute_turn_with(
            Some(Message::user("two")),
            TurnOptions::new()
                .with_auth(AuthContext::new("alice").with_credentials("token-2"))
                .with_task_id("task-two"),
        )
        .await
        .unwrap();
    assert_eq!(t.task_id(), "task-two");
    t.finish().await.unwrap();
    // No auth this time: tools see none (nothing stale carried over).
    send(&agent, Message::user("three")).await;

    let seen = tools.seen();
    assert_eq!(seen.len(), 4);
    for s in &seen[..2] {
        assert_eq!(s.principal.as_deref(), Some("alice"));
        assert_eq!(s.credentials.as_deref(), Some("token-1"));
        assert_eq!(s.turn_number, Some(1));
    }
    assert_eq!(seen[0].task_id, seen[1].task_id);
    assert_eq!(seen[2].credentials.as_deref(), Some("token-2"));
    assert_eq!(seen[2].task_id, "task-two");
    assert_eq!(seen[2].turn_number, Some(2));
    assert_eq!(seen[3].principal, None);
    assert_eq!(seen[3].credentials, None);
    assert_eq!(seen[3].turn_number, Some(3));
}
