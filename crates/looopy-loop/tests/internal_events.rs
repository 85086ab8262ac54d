//! The internal events a turn builds follow its `internal_events` setting:
//! the public events are always there, the internal ones only when asked.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::collections::BTreeSet;

use looopy_core::{
    AgentEvent, EventPayload, FinishReason, History, LlmChunk, LlmResponse, Message, TurnContext,
    TurnEnd,
};
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
        "internal:tool-call-done",
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

#[tokio::test]
async fn the_models_reasoning_is_an_event_of_its_own_beside_the_answer() {
    let mut answer = LlmResponse::text("Paris.");
    answer.reasoning = Some("The user asks for a capital; France's is Paris.".into());
    let llm = ScriptedLlm::new().respond(answer);
    let agent = AgentLoop::builder(llm).build();
    let read = |settings| {
        let agent = agent.clone();
        async move {
            drain(agent.start_turn_with(
                History::from(vec![Message::user("capital of France?")]),
                TurnContext::new("t", "c"),
                settings,
            ))
            .await
        }
    };
    let events = read(TurnSettings::new().with_internal_events(InternalEvents::TEXT)).await;
    let reasoning: Vec<&str> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::Reasoning { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasoning,
        vec!["The user asks for a capital; France's is Paris."]
    );
    assert_eq!(
        final_text(&events),
        "Paris.",
        "the answer is not the reasoning"
    );
}

#[tokio::test]
async fn reaching_the_iteration_limit_is_a_warning_event_before_the_wrap_up() {
    let call =
        || LlmResponse::tool_calls("", vec![looopy_core::ToolCall::new("", "weather", "{}")]);
    let llm = ScriptedLlm::new()
        .respond(call())
        .respond(call())
        .respond(LlmResponse::text("It is sunny."));
    let tools = FnTools::new().echo("weather", std::time::Duration::ZERO);
    let agent = AgentLoop::builder(llm)
        .tools(tools)
        .max_iterations(2)
        .build();
    let events = drain(agent.start_turn(
        History::from(vec![Message::user("weather?")]),
        TurnContext::new("t", "c"),
    ))
    .await;
    let (position, limit, max, iteration, message) = events
        .iter()
        .enumerate()
        .find_map(|(i, e)| match &*e.payload {
            EventPayload::LimitReached {
                limit,
                max,
                iteration,
                message,
            } => Some((i, *limit, *max, *iteration, message.clone())),
            _ => None,
        })
        .expect("a limit-reached event");
    assert_eq!((limit, max, iteration), (TurnEnd::MaxIterations, 2, 2));
    assert!(message.contains("limit of 2 iterations"), "{message}");
    // It comes before the wrap-up call (the third model call).
    let calls: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == "internal:llm-call")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(calls.len(), 3);
    assert!(calls[1] < position && position < calls[2]);
    assert_eq!(final_text(&events), "It is sunny.");
}
