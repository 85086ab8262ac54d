//! The fallback layer in a loop: the next model answers once the first has
//! used its retries on an overload; a bad request goes to no other model;
//! every attempt is an event on the `chat` span.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use looopy_core::{
    History, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, Message, TaskState,
    TurnContext,
};
use looopy_loop::layers::{FallbackLayer, RetryPolicy};
use looopy_loop::{AgentLoop, AgentLoopConfig};
use looopy_testkit::{ScriptedLlm, SpanCapture};
use opentelemetry::Value;
use opentelemetry_sdk::trace::SpanData;
use support::*;

/// A scripted model under a name of its own.
#[derive(Clone)]
struct Named {
    script: ScriptedLlm,
    model: &'static str,
}

#[async_trait]
impl LlmProvider for Named {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        self.script.call(request, cx).await
    }
    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        LlmProvider::stream(&self.script, request, cx)
    }
    fn provider_name(&self) -> &str {
        "scripted"
    }
    fn model_name(&self) -> &str {
        self.model
    }
}

fn named(model: &'static str, script: ScriptedLlm) -> Named {
    Named { script, model }
}

fn overloaded() -> LlmError {
    LlmError::Overloaded {
        message: "overloaded_error".into(),
        retry_after: None,
    }
}

/// A loop around `primary`, with one retry and `fallbacks` after it.
fn agent(primary: &Named, fallbacks: &[&Named], stream: bool) -> AgentLoop {
    let retry = RetryPolicy::default()
        .with_max_retries(1)
        .with_delays(Duration::from_millis(10), Duration::from_millis(10));
    let fallbacks: Vec<Arc<dyn LlmProvider>> = fallbacks
        .iter()
        .map(|m| Arc::new((*m).clone()) as Arc<dyn LlmProvider>)
        .collect();
    AgentLoop::builder(primary.clone())
        .retry(retry.clone())
        .llm_layer(FallbackLayer::new(fallbacks).with_retry(retry))
        .config(AgentLoopConfig {
            stream,
            ..AgentLoopConfig::default()
        })
        .build()
}

async fn run(agent: &AgentLoop) -> Vec<looopy_core::AgentEvent> {
    let cx = TurnContext::new("t-f", "ctx-f");
    drain(agent.start_turn(History::from(vec![Message::user("hi")]), cx)).await
}

/// The events of the `chat` span: (name, attributes as strings).
fn chat_events(spans: &[SpanData]) -> Vec<(String, Vec<(String, String)>)> {
    let chat: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "chat scripted-a")
        .collect();
    assert_eq!(
        chat.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    chat[0]
        .events
        .iter()
        .map(|e| {
            let attributes = e
                .attributes
                .iter()
                .map(|kv| (kv.key.to_string(), value(&kv.value)))
                .collect();
            (e.name.to_string(), attributes)
        })
        .collect()
}

fn value(v: &Value) -> String {
    v.to_string()
}

fn get<'a>(attributes: &'a [(String, String)], key: &str) -> Option<&'a str> {
    attributes
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[tokio::test(start_paused = true)]
async fn the_next_model_answers_after_the_first_stays_overloaded() {
    for stream in [true, false] {
        let a = named(
            "scripted-a",
            ScriptedLlm::new().fail(overloaded()).fail(overloaded()),
        );
        let b = named(
            "scripted-b",
            ScriptedLlm::new().respond(LlmResponse::text("from b")),
        );
        let request = {
            let agent = agent(&a, &[&b], stream);
            let events = run(&agent).await;
            assert_eq!(final_text(&events), "from b", "stream: {stream}");
            assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
            b.script.requests()
        };
        assert_eq!(
            a.script.request_count(),
            2,
            "the first model used its retry"
        );
        assert_eq!(request.len(), 1);
        assert_eq!(request[0].model, None, "the fallback uses its own model");
        assert_eq!(request[0].messages.len(), 1, "the same conversation");
    }
}

#[tokio::test(start_paused = true)]
async fn a_bad_request_is_not_sent_to_another_model() {
    let a = named(
        "scripted-a",
        ScriptedLlm::new().fail(LlmError::BadRequest {
            message: "messages: field required".into(),
        }),
    );
    let b = named(
        "scripted-b",
        ScriptedLlm::new().respond(LlmResponse::text("from b")),
    );
    let events = run(&agent(&a, &[&b], true)).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert_eq!(a.script.request_count(), 1, "a bad request is not retried");
    assert_eq!(b.script.request_count(), 0, "nor sent to the fallback");
    let message = final_meta(&events)["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("messages: field required"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn when_every_model_fails_the_error_names_the_models_tried() {
    let a = named(
        "scripted-a",
        ScriptedLlm::new().with_fallback(looopy_testkit::ScriptStep::Fail(overloaded())),
    );
    let b = named(
        "scripted-b",
        ScriptedLlm::new().with_fallback(looopy_testkit::ScriptStep::Fail(
            LlmError::Authentication {
                message: "invalid x-api-key".into(),
            },
        )),
    );
    let c = named(
        "scripted-c",
        ScriptedLlm::new().respond(LlmResponse::text("never")),
    );
    let events = run(&agent(&a, &[&b, &c], true)).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert_eq!(b.script.request_count(), 1, "authentication is not retried");
    assert_eq!(c.script.request_count(), 0, "nor sent further");
    let error = &final_meta(&events)["error"];
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("tried 2 models (scripted-a, scripted-b;")
            && message.contains("invalid x-api-key"),
        "{message}"
    );
}

#[tokio::test(start_paused = true)]
async fn each_attempt_is_an_event_on_the_chat_span() {
    let capture = SpanCapture::install();
    let a = named(
        "scripted-a",
        ScriptedLlm::new().fail(overloaded()).fail(overloaded()),
    );
    let b = named(
        "scripted-b",
        ScriptedLlm::new().with_fallback(looopy_testkit::ScriptStep::Fail(LlmError::Server {
            status: 503,
            message: "unavailable".into(),
            retry_after: None,
        })),
    );
    let c = named(
        "scripted-c",
        ScriptedLlm::new().respond(LlmResponse::text("from c")),
    );
    let events = run(&agent(&a, &[&b, &c], true)).await;
    assert_eq!(final_text(&events), "from c");
    let spans = capture.finish();
    let attempts: Vec<_> = chat_events(&spans)
        .into_iter()
        .filter(|(_, a)| get(a, "looopy.fallback.attempt").is_some())
        .collect();
    let summary: Vec<(String, String, String, String)> = attempts
        .iter()
        .map(|(name, a)| {
            (
                name.clone(),
                get(a, "looopy.fallback.attempt").unwrap().to_owned(),
                get(a, "gen_ai.request.model").unwrap().to_owned(),
                get(a, "error.type").unwrap_or("").to_owned(),
            )
        })
        .collect();
    let row = |n: &str, at: &str, model: &str, kind: &str| {
        (
            n.to_owned(),
            at.to_owned(),
            model.to_owned(),
            kind.to_owned(),
        )
    };
    assert_eq!(
        summary,
        vec![
            row("model attempt failed", "1", "scripted-a", "overloaded"),
            row("model attempt failed", "2", "scripted-b", "server_error"),
            row("fallback model answered", "3", "scripted-c", ""),
        ]
    );
    assert_eq!(
        get(&attempts[0].1, "looopy.fallback.next_model"),
        Some("scripted-b")
    );
}
