//! Streamed tool calls: the model's argument pieces reach observers as
//! events before the call runs.

#![allow(clippy::unwrap_used)]
use crate::support;

use looopy_core::{
    EventPayload, FinishReason, History, LlmChunk, LlmResponse, Message, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;
use support::*;

fn start(index: usize, id: &str, name: &str) -> LlmChunk {
    LlmChunk::ToolCallStart {
        index,
        id: id.into(),
        name: name.into(),
    }
}

fn args(index: usize, piece: &str) -> LlmChunk {
    LlmChunk::ToolCallDelta {
        index,
        arguments: piece.into(),
    }
}

#[tokio::test]
async fn argument_deltas_of_interleaved_calls_are_emitted_per_call_before_they_run() {
    let llm = ScriptedLlm::new()
        .stream(vec![
            start(0, "call_a", "weather"),
            args(0, "{\"city\":"),
            start(1, "call_b", "time"),
            args(1, "{\"tz\":\"UTC\"}"),
            args(0, "\"Paris\"}"),
            LlmChunk::Finish(FinishReason::ToolCalls),
        ])
        .respond(LlmResponse::text("done"));
    let tools = FnTools::new()
        .echo("weather", std::time::Duration::ZERO)
        .echo("time", std::time::Duration::ZERO);
    let agent = AgentLoop::builder(llm).tools(tools).build();
    let events = drain(agent.start_turn(
        History::from(vec![Message::user("weather and time?")]),
        TurnContext::new("t", "c"),
    ))
    .await;

    let begins: Vec<(usize, String, String)> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ToolCallBegin {
                iteration: 1,
                index,
                call_id,
                name,
            } => Some((*index, call_id.clone(), name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        begins,
        vec![
            (0, "call_a".into(), "weather".into()),
            (1, "call_b".into(), "time".into())
        ]
    );

    let mut joined = std::collections::BTreeMap::<String, (String, String)>::new();
    for e in &events {
        if let EventPayload::ToolCallArgumentsDelta {
            call_id,
            name,
            delta,
            ..
        } = &*e.payload
        {
            let entry = joined.entry(call_id.clone()).or_default();
            entry.0.clone_from(name);
            entry.1.push_str(delta);
        }
    }
    assert_eq!(
        joined["call_a"],
        ("weather".into(), "{\"city\":\"Paris\"}".into())
    );
    assert_eq!(joined["call_b"], ("time".into(), "{\"tz\":\"UTC\"}".into()));

    // Every delta comes before the first call runs.
    let kinds = kinds(&events);
    let last_delta = kinds
        .iter()
        .rposition(|k| *k == "internal:tool-call-delta")
        .unwrap();
    let first_run = kinds
        .iter()
        .position(|k| *k == "internal:tool-start")
        .unwrap();
    assert!(last_delta < first_run, "{kinds:?}");

    // Then one "arguments done" per call, with its whole arguments, after
    // its deltas and before anything runs.
    let done: Vec<(usize, String, String, String)> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ToolCallArgumentsDone {
                iteration: 1,
                index,
                call_id,
                name,
                arguments,
            } => Some((*index, call_id.clone(), name.clone(), arguments.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        done,
        vec![
            (
                0,
                "call_a".into(),
                "weather".into(),
                "{\"city\":\"Paris\"}".into()
            ),
            (1, "call_b".into(), "time".into(), "{\"tz\":\"UTC\"}".into()),
        ]
    );
    let first_done = kinds
        .iter()
        .position(|k| *k == "internal:tool-call-done")
        .unwrap();
    let last_done = kinds
        .iter()
        .rposition(|k| *k == "internal:tool-call-done")
        .unwrap();
    assert!(
        last_delta < first_done && last_done < first_run,
        "{kinds:?}"
    );
}

#[tokio::test]
async fn a_turn_without_streaming_emits_no_deltas() {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![looopy_core::ToolCall::new("c1", "weather", "{}")],
        ))
        .respond(LlmResponse::text("done"));
    let tools = FnTools::new().echo("weather", std::time::Duration::ZERO);
    let agent = AgentLoop::builder(llm).tools(tools).stream(false).build();
    let events = drain(agent.start_turn(
        History::from(vec![Message::user("weather?")]),
        TurnContext::new("t", "c"),
    ))
    .await;
    let kinds = kinds(&events);
    assert!(kinds.contains(&"internal:tool-start"), "{kinds:?}");
    assert!(
        !kinds.iter().any(|k| k.starts_with("internal:tool-call-")),
        "{kinds:?}"
    );
}
