//! The internal events a turn builds follow its `internal_events` setting:
//! the public events are always there, the internal ones only when asked.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::collections::BTreeSet;

use looopy_core::{AgentEvent, FinishReason, History, LlmChunk, LlmResponse, Message, TurnContext};
use looopy_loop::{AgentLoop, InternalEvents, TurnSettings};
use looopy_testkit::ScriptedLlm;
use support::*;

/// A turn with a streamed tool call, then the answer.
async fn turn(settings: TurnSettings) -> Vec<AgentEvent> {
    let llm = ScriptedLlm::new()
        .stream(vec![
            LlmChunk::ToolCallStart {
                index: 0,
                id: "call_a".into(),
                name: "weather".into(),
            },
            LlmChunk::ToolCallDelta {
                index: 0,
                arguments: "{\"city\":\"Paris\"}".into(),
            },
            LlmChunk::Finish(FinishReason::ToolCalls),
        ])
        .respond(LlmResponse::text("sunny"));
    let tools = FnTools::new().echo("weather", std::time::Duration::ZERO);
    let agent = AgentLoop::builder(llm).tools(tools).build();
    drain(agent.start_turn_with(
        History::from(vec![Message::user("weather?")]),
        TurnContext::new("t", "c"),
        settings,
    ))
    .await
}

fn internal_kinds(events: &[AgentEvent]) -> BTreeSet<&'static str> {
    events
        .iter()
        .filter(|e| e.is_internal())
        .map(AgentEvent::kind)
        .collect()
}

fn public_kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events
        .iter()
        .filter(|e| !e.is_internal())
        .map(AgentEvent::kind)
        .collect()
}

#[tokio::test]
async fn a_turn_nobody_narrowed_builds_every_internal_event() {
    let events = turn(TurnSettings::new()).await;
    let kinds = internal_kinds(&events);
    for kind in [
        "internal:llm-call",
        "internal:llm-response",
        "internal:tool-call-begin",
        "internal:tool-call-delta",
        "internal:tool-start",
        "internal:tool-complete",
        "internal:execution-start",
        "internal:execution-end",
        "internal:iteration-start",
    ] {
        assert!(kinds.contains(kind), "{kind} missing from {kinds:?}");
    }
}

#[tokio::test]
async fn with_no_interest_no_internal_event_is_emitted_and_the_public_ones_are_unchanged() {
    let all = turn(TurnSettings::new()).await;
    let none = turn(TurnSettings::new().with_internal_events(InternalEvents::NONE)).await;
    assert_eq!(internal_kinds(&none), BTreeSet::new());
    assert_eq!(public_kinds(&none), public_kinds(&all));
    assert!(none.last().unwrap().is_final());
    assert!(public_kinds(&none).contains(&"artifact-update"));
}

#[tokio::test]
async fn only_the_kinds_asked_for_are_emitted() {
    let some = turn(
        TurnSettings::new()
            .with_internal_events(InternalEvents::NONE)
            .also_building(InternalEvents::TOOL_COMPLETE),
    )
    .await;
    assert_eq!(
        internal_kinds(&some),
        BTreeSet::from(["internal:tool-complete"])
    );

    let progress =
        turn(TurnSettings::new().with_internal_events(InternalEvents::TOOL_PROGRESS)).await;
    let tool_kinds = BTreeSet::from([
        "internal:tool-call-begin",
        "internal:tool-call-delta",
        "internal:tool-complete",
        "internal:tool-start",
    ]);
    let kinds = internal_kinds(&progress);
    // Usage is reported only by a model that reports it.
    let without_usage: BTreeSet<_> = kinds
        .iter()
        .copied()
        .filter(|k| *k != "internal:usage")
        .collect();
    assert_eq!(without_usage, tool_kinds);
}

#[test]
fn adding_to_a_turn_that_builds_everything_keeps_everything() {
    let settings = TurnSettings::new().also_building(InternalEvents::TOOL_COMPLETE);
    assert_eq!(settings.internal_events, None);
    assert!(settings.is_empty());
}
