//! Trace context and GenAI span fields (feature `otel`), of the chat
//! completions and the Responses providers.
//!
//! The tests install what an application would: the W3C propagator and a
//! tracing subscriber with an OpenTelemetry layer (exporting to memory).
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;

use looopy_core::LlmProvider;
use looopy_llm_litellm::{LiteLlmProvider, OpenAiResponsesProvider};
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::provider_conformance::{OpenAiChatWire, OpenAiResponsesWire, chat_spans};
use looopy_testkit::{FixtureReply, OpenAiFixture};
use looopy_testkit::{SpanCapture, attribute as attr};
use opentelemetry::Value;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::trace::SpanData;
use support::{ask, cx, drain, provider};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// `traceparent` is `00-<trace id>-<span id>-<flags>`.
fn parse_traceparent(header: &str) -> (String, String) {
    let parts: Vec<&str> = header.split('-').collect();
    assert_eq!(parts.len(), 4, "{header}");
    assert_eq!(parts[0], "00");
    (parts[1].to_owned(), parts[2].to_owned())
}

#[tokio::test]
async fn requests_carry_the_span_context_and_spans_the_genai_fields() {
    let capture = SpanCapture::install();

    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion("plain")))
        .push(FixtureReply::sse(vec![
            openai::text_chunk("streamed"),
            openai::finish_chunk("stop"),
            openai::usage_chunk(7, 2),
        ]))
        .push(FixtureReply::error(401, "nope"));
    let llm = provider(&f);
    let cx = cx();

    let parent = tracing::info_span!("agent turn");
    let trace_id = parent
        .context()
        .span()
        .span_context()
        .trace_id()
        .to_string();
    async {
        llm.call(ask("a"), &cx).await.unwrap();
        let (_, err) = drain(llm.stream(ask("b"), &cx)).await;
        assert_eq!(err, None);
        llm.call(ask("c"), &cx).await.unwrap_err();
    }
    .instrument(parent.clone())
    .await;
    drop(parent);
    let spans = capture.spans();
    let chat: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "chat test-model")
        .collect();
    assert_eq!(
        chat.len(),
        3,
        "one span per call: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );

    let requests = f.requests();
    for (request, span) in requests.iter().zip(&chat) {
        let header = request.header("traceparent").expect("a traceparent header");
        let (tid, sid) = parse_traceparent(header);
        assert_eq!(tid, trace_id, "same trace as the caller's span");
        assert_eq!(
            sid,
            span.span_context.span_id().to_string(),
            "the request's parent is the chat span"
        );
        assert_eq!(span.span_context.trace_id().to_string(), trace_id);
        assert_eq!(
            attr(span, "gen_ai.operation.name"),
            Some(&Value::from("chat"))
        );
        assert_eq!(
            attr(span, "gen_ai.provider.name"),
            Some(&Value::from("openai"))
        );
        assert_eq!(
            attr(span, "gen_ai.request.model"),
            Some(&Value::from("test-model"))
        );
    }
    let (plain, streamed, failed) = (chat[0], chat[1], chat[2]);
    assert_eq!(
        attr(plain, "gen_ai.response.finish_reasons"),
        Some(&Value::from("[\"stop\"]"))
    );
    assert_eq!(
        attr(plain, "gen_ai.usage.input_tokens"),
        Some(&Value::I64(10))
    );
    assert_eq!(
        attr(plain, "gen_ai.response.model"),
        Some(&Value::from("fixture-model"))
    );
    assert_eq!(
        attr(streamed, "gen_ai.usage.input_tokens"),
        Some(&Value::I64(7))
    );
    assert_eq!(
        attr(streamed, "gen_ai.usage.output_tokens"),
        Some(&Value::I64(2))
    );
    assert_eq!(
        attr(failed, "error.type"),
        Some(&Value::from("authentication"))
    );
    assert_eq!(attr(failed, "gen_ai.response.finish_reasons"), None);
}

#[tokio::test]
async fn a_chat_span_opened_by_the_caller_is_used_not_nested() {
    let capture = SpanCapture::install();
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion("a")))
        .push(FixtureReply::sse(vec![openai::text_chunk("b")]));
    let llm = provider(&f);
    let cx = cx();
    // What the agent loop opens around each model call.
    let outer = tracing::info_span!("chat", gen_ai.operation.name = "chat");
    let outer_id = outer.context().span().span_context().span_id().to_string();
    async {
        llm.call(ask("a"), &cx).await.unwrap();
        let (_, err) = drain(llm.stream(ask("b"), &cx)).await;
        assert_eq!(err, None);
    }
    .instrument(outer.clone())
    .await;
    drop(outer);
    let spans = capture.spans();
    assert_eq!(
        spans.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for request in f.requests() {
        let (_, sid) = parse_traceparent(request.header("traceparent").unwrap());
        assert_eq!(sid, outer_id);
    }
}

#[tokio::test]
async fn chat_completions_spans_carry_the_cache_and_reasoning_counts() {
    let make = |url: &str| -> Arc<dyn LlmProvider> {
        Arc::new(LiteLlmProvider::new(support::config_for(url)).expect("a valid configuration"))
    };
    chat_spans(&OpenAiChatWire, &make).await;
}

#[tokio::test]
async fn responses_spans_carry_the_cache_and_reasoning_counts() {
    let make = |url: &str| -> Arc<dyn LlmProvider> {
        Arc::new(
            OpenAiResponsesProvider::new(support::config_for(url)).expect("a valid configuration"),
        )
    };
    chat_spans(&OpenAiResponsesWire, &make).await;
}
