//! The `chat` span of a provider's calls (feature `otel`).

use looopy_core::{ChatSpan, LlmProvider};
use opentelemetry::Value;
use opentelemetry_sdk::trace::SpanData;
use tracing::Instrument;

use super::{MakeProvider, VendorWire, ask, call_ok, fixture, full_usage, stream_ok};
use crate::{SpanCapture, attribute};

/// The spans of a provider's calls, as OpenTelemetry exports them: a call
/// on its own runs in a `chat` span of its own with the provider's name,
/// the finish reason and every token count the vendor reports (the prompt
/// cache's reads and writes, the reasoning tokens), whole and streamed; a
/// call inside a caller's `chat` span (the agent loop's) opens none.
///
/// It installs a [`SpanCapture`] for the thread: run it on a current-thread
/// runtime (`#[tokio::test]`'s default), in a test binary of its own so that
/// no test without a subscriber races it for the spans' callsites.
pub async fn chat_spans(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let name = wire.name();
    let want = full_usage(wire);
    let capture = SpanCapture::install();
    let f = fixture().await;
    f.push(wire.text("ok", want));
    f.push(wire.text_stream(&["o", "k"], want));
    f.push(wire.text("ok", want));
    let provider = make(&f.base_url());
    let _ = call_ok(wire, provider.as_ref(), ask("count")).await;
    let _ = stream_ok(wire, provider.as_ref(), ask("count")).await;
    let outer = ChatSpan::new(provider.provider_name(), "outer");
    let _ = call_ok(wire, provider.as_ref(), ask("count"))
        .instrument(outer.span().clone())
        .await;
    outer.success("stop", Some(want), None);
    drop(outer);
    let spans = capture.finish();
    let chat: Vec<&SpanData> = spans
        .iter()
        .filter(|s| attribute(s, "gen_ai.operation.name") == Some(&Value::from("chat")))
        .collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(
        chat.len(),
        3,
        "{name}: one chat span per call, none inside the caller's: {names:?}"
    );
    let int = |n: u64| Some(Value::I64(i64::try_from(n).unwrap_or(i64::MAX)));
    let optional = |n: u64| if n > 0 { int(n) } else { None };
    for (i, span) in chat.iter().enumerate() {
        let got = |key: &str| attribute(span, key).cloned();
        let which = format!("{name}: chat span {i} ({})", span.name);
        assert_eq!(
            got("gen_ai.provider.name"),
            Some(Value::from(provider.provider_name().to_owned())),
            "{which}: provider"
        );
        assert!(
            got("gen_ai.request.model").is_some(),
            "{which}: the requested model"
        );
        assert_eq!(
            got("gen_ai.response.finish_reasons"),
            Some(Value::from("[\"stop\"]")),
            "{which}: finish reasons"
        );
        assert_eq!(
            got("gen_ai.usage.input_tokens"),
            int(want.input_tokens),
            "{which}: input tokens"
        );
        assert_eq!(
            got("gen_ai.usage.output_tokens"),
            int(want.output_tokens),
            "{which}: output tokens"
        );
        assert_eq!(
            got("gen_ai.usage.cache_read.input_tokens"),
            int(want.cached_input_tokens),
            "{which}: cache reads"
        );
        assert_eq!(
            got("gen_ai.usage.cache_creation.input_tokens"),
            optional(want.cache_creation_input_tokens),
            "{which}: cache writes"
        );
        assert_eq!(
            got("gen_ai.usage.reasoning.output_tokens"),
            optional(want.reasoning_tokens),
            "{which}: reasoning tokens"
        );
        assert_eq!(got("error.type"), None, "{which}: no error");
    }
}
