//! The done tool's message is the turn's answer and stays in the
//! conversation's history: the store keeps it and the next turn's model
//! sees it.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::{LlmResponse, Role, TaskState, ToolCall, TurnEnd};
use looopy_testkit::ScriptedLlm;
use looopy_tools::DoneTool;
use support::*;

#[tokio::test]
async fn the_done_tools_message_is_kept_in_the_history() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new(
                "d1",
                "done",
                r#"{"message":"The report is ready."}"#,
            )],
        ))
        .respond(LlmResponse::text("You asked for the report."));
    let agent = builder("c-done", &llm, &stores)
        .tools(DoneTool::new())
        .build()
        .unwrap();
    let (_, finished) = turn(&agent, "write the report").await;
    assert_eq!(finished.end, TurnEnd::DoneTool);
    assert_eq!(finished.state, TaskState::Completed);
    assert_eq!(finished.message.unwrap().text(), "The report is ready.");

    let stored = stores.messages.load("c-done").await.unwrap();
    let last = stored.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.text(), "The report is ready.");
    assert!(last.tool_calls.is_empty(), "the answer calls no tool");
    assert_tool_pairs_intact(&stored);

    // The next turn's model reads the answer it gave.
    turn(&agent, "what did you say?").await;
    let next = llm.requests()[1].messages.to_vec();
    assert!(
        next.iter()
            .any(|m| m.role == Role::Assistant && m.text() == "The report is ready."),
        "{next:#?}"
    );
}
