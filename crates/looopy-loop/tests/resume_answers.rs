//! A resumed turn announces again, whole, the answers its checkpoint says
//! were streamed (`TaskCheckpoint::streamed_answers`), also when it goes on
//! working: text the model wrote before its tool calls is announced on the
//! artifact it streamed on, before the resumed turn carries on.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use looopy_core::store::CheckpointStore;
use looopy_core::{
    AgentEvent, EventPayload, History, LlmResponse, Message, TaskState, ToolCall, ToolResult,
    TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_stores_memory::MemoryCheckpointStore;
use looopy_testkit::ScriptedLlm;
use support::*;

fn cx() -> TurnContext {
    TurnContext::new("task-a", "ctx-a")
}

/// `slow` answers after an hour unless `quick`.
fn tools(quick: bool) -> FnTools {
    FnTools::new()
        .tool("slow", move |call, _| async move {
            if !quick {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            ToolResult::text(&call.id, "slow result")
        })
        .idempotent("slow")
}

/// (artifact id, text, append) of each artifact-update event.
fn artifact_updates(events: &[AgentEvent]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ArtifactUpdate {
                artifact, append, ..
            } => Some((
                artifact.artifact_id.clone(),
                artifact
                    .parts
                    .iter()
                    .filter_map(|p| p.as_text())
                    .collect::<String>(),
                *append,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_turn_resumed_mid_work_announces_the_text_streamed_before_its_tool_calls() {
    let store = Arc::new(MemoryCheckpointStore::new());
    let llm = ScriptedLlm::new().respond(LlmResponse::tool_calls(
        "Let me look that up.",
        vec![ToolCall::new("call-slow", "slow", "{}")],
    ));
    let first = AgentLoop::builder(llm)
        .tools(tools(false))
        .task_store(store.clone())
        .build();
    let mut stream = first.start_turn(History::from(vec![Message::user("q")]), cx());
    let mut streamed = Vec::new();
    while let Some(e) = stream.next().await {
        let tool_started = e.kind() == "internal:tool-start";
        streamed.push(e);
        if tool_started {
            break;
        }
    }
    let announced = artifact_updates(&streamed);
    assert_eq!(announced.len(), 1, "{announced:?}");
    let (artifact_id, text, _) = announced[0].clone();
    assert_eq!(text, "Let me look that up.");
    // The checkpoint holding the call names the streamed answer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let saved = loop {
        let c = store.load("task-a").await.unwrap();
        if let Some(c) = c.filter(|c| !c.streamed_answers.is_empty()) {
            break c;
        }
        assert!(tokio::time::Instant::now() < deadline, "no checkpoint");
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    assert_eq!(saved.streamed_answers[0].artifact_id, artifact_id);
    assert_eq!(
        saved
            .messages
            .get(saved.streamed_answers[0].message)
            .unwrap()
            .text(),
        text
    );
    drop(stream);

    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("Found it."));
    let second = AgentLoop::builder(llm2)
        .tools(tools(true))
        .task_store(store.clone())
        .build();
    let events = drain(second.resume(cx())).await;
    assert_eq!(
        events.last().unwrap().state(),
        Some(TaskState::Completed),
        "{events:?}"
    );
    let updates = artifact_updates(&events);
    assert_eq!(
        updates[0],
        (artifact_id.clone(), text, false),
        "the earlier text first, whole: {updates:?}"
    );
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert_eq!(updates[1].1, "Found it.");
    assert_ne!(
        updates[1].0, artifact_id,
        "the new answer has its own artifact"
    );
    // The final checkpoint names both answers.
    let last = store.load("task-a").await.unwrap().unwrap();
    assert_eq!(last.streamed_answers.len(), 2);
}
