//! W3C trace context on MCP tool calls (feature `otel`), against the Python
//! fixture server, whose `trace_context` tool returns the `_meta` it received
//! and, over HTTP, the `traceparent` header of the POST.
//!
//! The tests install what an application would: the W3C propagator and a
//! tracing subscriber with an OpenTelemetry layer.
#![cfg(all(feature = "mcp", feature = "otel"))]
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::{ToolCall, ToolProvider, TurnContext};
use looopy_testkit::SpanCapture;
use looopy_tools::{HttpServer, McpToolProvider, StdioServer};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use serde_json::Value;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// What the server saw: its `_meta` and the `traceparent` header.
async fn seen(mcp: &McpToolProvider) -> Value {
    let cx = TurnContext::new("t", "c");
    let r = mcp
        .execute(&ToolCall::new("1", "trace_context", ""), &cx)
        .await;
    assert!(!r.is_error, "{}", r.text_content());
    serde_json::from_str(&r.text_content()).unwrap()
}

/// `(trace id, span id)` of a span, as in a `traceparent`.
fn ids(span: &tracing::Span) -> (String, String) {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    assert!(sc.is_valid(), "the span has no OpenTelemetry context");
    (sc.trace_id().to_string(), sc.span_id().to_string())
}

/// `traceparent` is `00-<trace id>-<span id>-<flags>`.
fn parse_traceparent(value: &Value) -> (String, String) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent: {value}"));
    let parts: Vec<&str> = text.split('-').collect();
    assert_eq!(parts.len(), 4, "{text}");
    assert_eq!(parts[0], "00", "{text}");
    (parts[1].to_owned(), parts[2].to_owned())
}

#[tokio::test]
async fn a_stdio_call_carries_the_span_context_in_meta() {
    let Some(python) = support::python() else {
        return;
    };
    let _capture = SpanCapture::install();
    let mcp = McpToolProvider::new(
        StdioServer::new(&python)
            .arg(support::fixture_server().display().to_string())
            .arg("stdio"),
    );

    // Outside any span: nothing to propagate, no made-up context.
    let got = seen(&mcp).await;
    assert!(got["meta"].get("traceparent").is_none(), "{got}");

    let span = tracing::info_span!("execute_tool");
    let (trace_id, span_id) = ids(&span);
    let got = seen(&mcp).instrument(span).await;
    assert_eq!(
        parse_traceparent(&got["meta"]["traceparent"]),
        (trace_id, span_id),
        "the server's parent is the calling span: {got}"
    );
    assert!(got["traceparent_header"].is_null(), "no headers on stdio");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_http_call_carries_it_in_meta_and_in_the_header() {
    let Some(python) = support::python() else {
        return;
    };
    let _capture = SpanCapture::install();
    let server = support::HttpFixture::start(&python).await;
    let mcp = McpToolProvider::new(HttpServer::new(server.url.clone()));

    // The turn continues a remote caller's trace, with a tracestate.
    let remote = SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        true,
        TraceState::from_key_value([("looopy", "1")]).unwrap(),
    );
    let span = tracing::info_span!("execute_tool");
    span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote))
        .unwrap();
    let (trace_id, span_id) = ids(&span);
    assert_eq!(trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");

    let got = seen(&mcp).instrument(span).await;
    let meta = &got["meta"];
    assert_eq!(
        parse_traceparent(&meta["traceparent"]),
        (trace_id, span_id),
        "{got}"
    );
    assert_eq!(meta["tracestate"], "looopy=1", "{got}");
    assert_eq!(
        got["traceparent_header"], meta["traceparent"],
        "the POST's header is the same context: {got}"
    );
    mcp.shutdown().await.unwrap();
}
