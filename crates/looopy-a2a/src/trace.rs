//! Spans and W3C trace context (`traceparent`) on both sides of a call.
//!
//! With the `otel` feature the server makes each request's span a child of
//! the caller's `traceparent` and the client writes the current span's
//! context into its requests, both through OpenTelemetry's global text-map
//! propagator (install one, e.g. `TraceContextPropagator`, and a
//! `tracing-opentelemetry` layer; without them nothing is read or written).

use axum::http::HeaderMap;
use tracing::Span;

use crate::version::ProtocolVersion;

/// The span of one request to a binding (`system`: `jsonrpc`, `http`,
/// `grpc`), a child of the caller's trace context. The operation is
/// recorded on it once known ([`record_operation`]), and so are
/// `a2a.task.id` / `a2a.task.state` ([`record_task`]).
pub(crate) fn request_span(system: &'static str, headers: &HeaderMap) -> Span {
    let span = tracing::info_span!(
        "a2a.request",
        otel.name = "A2A request",
        otel.kind = "server",
        "rpc.system" = system,
        "a2a.method.name" = tracing::field::Empty,
        "a2a.protocol.version" = tracing::field::Empty,
        "a2a.task.id" = tracing::field::Empty,
        "a2a.task.state" = tracing::field::Empty,
    );
    set_remote_parent(&span, headers);
    span
}

/// Records the operation (its name as the request spelled it) and the
/// protocol version on the current request span.
pub(crate) fn record_operation(method: &str, version: ProtocolVersion) {
    let span = Span::current();
    if span.is_disabled() {
        return;
    }
    span.record("a2a.method.name", method);
    span.record("a2a.protocol.version", version.as_str());
    rename(&span, format!("A2A {method}"));
}

/// Names the span's OpenTelemetry span. The span was entered before the
/// operation was known, which starts its OpenTelemetry span: a later
/// `otel.name` would not reach it, so the name is set on the started span.
#[cfg(feature = "otel")]
fn rename(span: &Span, name: String) {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    span.context().span().update_name(name);
}

#[cfg(not(feature = "otel"))]
fn rename(span: &Span, name: String) {
    span.record("otel.name", name);
}

/// Records the task id and state on the current span.
pub(crate) fn record_task(task_id: &str, state: Option<looopy_core::TaskState>) {
    let span = Span::current();
    span.record("a2a.task.id", task_id);
    if let Some(s) = state {
        span.record("a2a.task.state", s.as_str());
    }
}

/// The trace id of the current span (32 hex digits), and whether it was
/// made up here: without the `otel` feature or an OpenTelemetry layer there
/// is no trace, and a random id stands in (it names nothing anywhere else).
pub(crate) fn current_trace_id() -> (String, bool) {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::trace::TraceContextExt;
        use tracing_opentelemetry::OpenTelemetrySpanExt;

        let context = Span::current().context();
        let span = context.span();
        let span_context = span.span_context();
        if span_context.is_valid() {
            return (span_context.trace_id().to_string(), false);
        }
    }
    (uuid::Uuid::new_v4().simple().to_string(), true)
}

#[cfg(feature = "otel")]
fn set_remote_parent(span: &Span, headers: &HeaderMap) {
    use opentelemetry::propagation::Extractor;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    struct HeaderExtractor<'a>(&'a HeaderMap);

    impl Extractor for HeaderExtractor<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|v| v.to_str().ok())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(|k| k.as_str()).collect()
        }
    }

    if !headers.contains_key("traceparent") {
        return;
    }
    let parent =
        opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)));
    // Fails only without an OpenTelemetry layer: then there is nothing to link.
    let _ = span.set_parent(parent);
}

#[cfg(not(feature = "otel"))]
fn set_remote_parent(_span: &Span, _headers: &HeaderMap) {}

/// Writes the current span's context into outgoing request headers.
#[cfg(feature = "otel")]
pub(crate) fn inject_current(headers: &mut reqwest::header::HeaderMap) {
    use opentelemetry::propagation::Injector;
    use reqwest::header::{HeaderName, HeaderValue};
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    struct HeaderInjector<'a>(&'a mut reqwest::header::HeaderMap);

    impl Injector for HeaderInjector<'_> {
        fn set(&mut self, key: &str, value: String) {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(key.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                self.0.insert(name, value);
            }
        }
    }

    let context = Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&context, &mut HeaderInjector(headers));
    });
}

/// Without `otel`, nothing is written.
#[cfg(not(feature = "otel"))]
pub(crate) fn inject_current(_headers: &mut reqwest::header::HeaderMap) {}
