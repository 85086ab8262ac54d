//! The summary call at the iteration limit is accepted by strict providers.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::time::Duration;

use async_trait::async_trait;
use looopy_core::{
    EventPayload, History, LlmError, LlmProvider, LlmRequest, LlmResponse, Message, Role,
    TaskState, ToolCall, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;
use support::*;

/// A model that refuses what strict providers refuse, then answers from
/// its script:
/// - Anthropic (and LiteLLM in front of it): messages holding tool calls or
///   tool results when the request defines no tools;
/// - OpenAI: a `tool_choice` without tools.
#[derive(Clone)]
struct StrictLlm(ScriptedLlm);

#[async_trait]
impl LlmProvider for StrictLlm {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        if request.tools.is_empty() {
            let tool_blocks = request
                .messages
                .iter()
                .any(|m| m.role == Role::Tool || !m.tool_calls.is_empty());
            if tool_blocks {
                return Err(LlmError::BadRequest {
                    message: "Requests which include `tool_use` or `tool_result` blocks must \
                              define tools."
                        .into(),
                });
            }
            if request.tool_choice.is_some() {
                return Err(LlmError::BadRequest {
                    message: "'tool_choice' is only allowed when 'tools' are specified.".into(),
                });
            }
        }
        self.0.call(request, cx).await
    }
}

fn final_text(events: &[looopy_core::AgentEvent]) -> String {
    let EventPayload::StatusUpdate { status, .. } = &*final_event(events).payload else {
        unreachable!()
    };
    status.message.as_ref().unwrap().text()
}

#[tokio::test]
async fn the_summary_at_the_iteration_limit_is_written_by_a_strict_model() {
    let scripted = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "Checking.",
            vec![ToolCall::new("c1", "weather", r#"{"city":"Paris"}"#)],
        ))
        .respond(LlmResponse::text("It is sunny in Paris."));
    let tools = FnTools::new().echo("weather", Duration::ZERO);
    let agent = AgentLoop::builder(StrictLlm(scripted.clone()))
        .tools(tools)
        .max_iterations(1)
        .build();
    let stream = agent.start_turn(
        History::from(vec![Message::user("weather in Paris?")]),
        TurnContext::new("t", "c"),
    );
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(final_meta(&events)["finishReason"], "max_iterations");
    assert!(
        !kinds(&events).contains(&"internal:llm-error"),
        "{:?}",
        kinds(&events)
    );
    assert_eq!(final_text(&events), "It is sunny in Paris.");

    // The model read what the tool returned, in text.
    let summary = scripted.requests().pop().unwrap();
    let said: String = summary.messages.iter().map(Message::text).collect();
    assert!(said.contains("weather:{\"city\":\"Paris\"}"), "{said}");
    assert!(said.contains("`weather`"), "{said}");
    assert_eq!(summary.messages.last().unwrap().role, Role::User);

    // The turn's own history keeps the calls as they were.
    let history = handle.outcome().unwrap().history;
    assert_eq!(history.get(1).unwrap().tool_calls.len(), 1);
    assert_eq!(history.get(2).unwrap().role, Role::Tool);
}
