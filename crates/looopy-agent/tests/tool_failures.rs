//! Typed tool failures through an Agent turn: a call that runs past its
//! limit and a call the approval hook refuses, as the caller of the Agent
//! sees them (events and the stored history).
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use looopy_core::{
    AgentEvent, EventPayload, LlmResponse, Role, ToolFailure, ToolOutcome, ToolResult, TurnContext,
};
use looopy_loop::hooks::{Approval, ApproveFn, HookContext};
use looopy_loop::layers::TimeoutTools;
use looopy_testkit::ScriptedLlm;
use looopy_tools::{LocalTools, NoArgs, ToolFnError};
use support::*;

fn tool_complete(events: &[AgentEvent]) -> (ToolResult, ToolOutcome) {
    events
        .iter()
        .find_map(|e| match &*e.payload {
            EventPayload::ToolComplete {
                result, outcome, ..
            } => Some((result.clone(), *outcome)),
            _ => None,
        })
        .expect("an internal:tool-complete event")
}

#[tokio::test]
async fn a_timed_out_tool_is_reported_as_a_timeout() {
    let tools = TimeoutTools::new(LocalTools::new().tool(
        "slow",
        "Takes its time",
        |_: NoArgs, _: TurnContext| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, ToolFnError>("never")
        },
    ))
    .with_timeout("slow", Duration::from_millis(20));
    let llm = ScriptedLlm::new()
        .respond(call("slow", &["s1"]))
        .respond(LlmResponse::text("it timed out"));
    let stores = looopy_stores_memory::stores();
    let agent = builder("ctx-timeout", &llm, &stores)
        .tools(tools)
        .build()
        .unwrap();
    let (events, _) = turn(&agent, "go").await;

    let (result, outcome) = tool_complete(&events);
    assert_eq!(outcome, ToolOutcome::Timeout);
    assert_eq!(result.failure, Some(ToolFailure::Timeout));
    assert!(result.is_error);
    assert!(
        result.text_content().contains("timed out after 20 ms"),
        "{}",
        result.text_content()
    );
    // The event's JSON carries the kind.
    let json = serde_json::to_value(
        events
            .iter()
            .find(|e| e.kind() == "internal:tool-complete")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(json["outcome"], "timeout", "{json}");
    assert_eq!(json["result"]["failure"], "timeout", "{json}");

    // The stored tool message keeps the kind for later readers.
    let stored = stores.messages.load("ctx-timeout").await.unwrap();
    let tool_message = stored.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool_message.tool_failure(), Some(ToolFailure::Timeout));
}

#[tokio::test]
async fn a_denied_call_is_reported_as_denied_and_does_not_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let tools = LocalTools::new().sync_tool(
        "delete_all",
        "Deletes everything",
        move |_: NoArgs, _: &TurnContext| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolFnError>("deleted")
        },
    );
    let llm = ScriptedLlm::new()
        .respond(call("delete_all", &["d1"]))
        .respond(LlmResponse::text("refused"));
    let stores = looopy_stores_memory::stores();
    let agent = builder("ctx-denied", &llm, &stores)
        .tools(tools)
        .configure_loop(|l| {
            l.hook(ApproveFn::new("no-deletes", |call, _: &HookContext| {
                if call.name == "delete_all" {
                    Approval::deny("Dangerous operation blocked")
                } else {
                    Approval::Allow
                }
            }))
        })
        .build()
        .unwrap();
    let (events, _) = turn(&agent, "go").await;

    let (result, outcome) = tool_complete(&events);
    assert_eq!(outcome, ToolOutcome::Error);
    assert_eq!(result.failure, Some(ToolFailure::Denied));
    assert_eq!(
        result.text_content(),
        "Error: Tool call denied: Dangerous operation blocked"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a denied call must not run");
    let stored = stores.messages.load("ctx-denied").await.unwrap();
    let tool_message = stored.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool_message.tool_failure(), Some(ToolFailure::Denied));
}
