//! W3C trace context on outgoing MCP tool calls (feature `otel`).
//!
//! The current span's context goes into `params._meta` of every `tools/call`
//! under the keys SEP-414 and the OpenTelemetry MCP semantic conventions
//! reserve (`traceparent`, `tracestate`, `baggage`); this reaches stdio and
//! HTTP servers alike. Over streamable HTTP, [`TracingHttpClient`] also sends
//! those values as HTTP headers of the POST that carries the call.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use opentelemetry::propagation::Injector;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage,
    RequestParamsMeta,
};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use serde_json::Value;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `_meta` keys reserved for W3C Trace Context and Baggage (SEP-414);
/// also the HTTP header names.
const KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// Writes the current span's context into the call's `_meta` with the
/// globally installed text-map propagator. Without a propagator, an
/// OpenTelemetry layer or a sampled-in span this adds nothing. Keys other
/// than the reserved ones (a B3 or Jaeger propagator's) are left out: `_meta`
/// keys must otherwise be prefixed.
pub(super) fn inject_current_context(params: &mut CallToolRequestParams) {
    let context = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut MetaInjector(params));
    });
}

struct MetaInjector<'a>(&'a mut CallToolRequestParams);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if KEYS.contains(&key) {
            self.0
                .meta_or_default()
                .0
                .0
                .insert(key.to_owned(), Value::String(value));
        }
    }
}

/// The trace context in a request's `_meta` (the envelope's, or else the
/// tool call's params'), as HTTP headers.
fn add_trace_headers(
    message: &ClientJsonRpcMessage,
    headers: &mut HashMap<HeaderName, HeaderValue>,
) {
    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    let envelope = &request.request.get_meta().0.0;
    let params = match &request.request {
        ClientRequest::CallToolRequest(call) => call.params.meta.as_ref().map(|m| &m.0.0),
        _ => None,
    };
    for key in KEYS {
        let value = envelope
            .get(key)
            .or_else(|| params.and_then(|p| p.get(key)))
            .and_then(Value::as_str)
            .and_then(|v| HeaderValue::from_str(v).ok());
        if let Some(value) = value {
            headers.insert(HeaderName::from_static(key), value);
        }
    }
}

/// rmcp's reqwest client, adding the trace context of each request's `_meta`
/// as HTTP headers (`traceparent`, `tracestate`, `baggage`) of its POST.
#[derive(Clone)]
pub(super) struct TracingHttpClient(reqwest::Client);

impl TracingHttpClient {
    pub(super) fn new() -> Result<Self, String> {
        super::http::http_client().map(TracingHttpClient)
    }
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

impl StreamableHttpClient for TracingHttpClient {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = HttpResult<StreamableHttpPostResponse>> + Send + '_ {
        add_trace_headers(&message, &mut custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, custom_headers)
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = HttpResult<StreamableHttpPostResponse>> + Send + '_ {
        add_trace_headers(&message, &mut custom_headers);
        self.0.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = HttpResult<()>> + Send + '_ {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = HttpResult<BoxedSseResponse>> + Send + '_ {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = HttpResult<BoxedSseResponse>> + Send + '_ {
        self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolRequest, JsonRpcRequest, NumberOrString};

    const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

    fn call_message(params: CallToolRequestParams) -> ClientJsonRpcMessage {
        JsonRpcMessage::Request(JsonRpcRequest::new(
            NumberOrString::Number(1),
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
        ))
    }

    #[test]
    fn only_the_reserved_keys_reach_meta_and_headers() {
        let mut params = CallToolRequestParams::new("t");
        let mut injector = MetaInjector(&mut params);
        injector.set("traceparent", TRACEPARENT.into());
        injector.set("tracestate", "k=v".into());
        injector.set("uber-trace-id", "x".into());
        let meta = params
            .meta
            .as_ref()
            .map(|m| m.0.0.clone())
            .unwrap_or_default();
        assert_eq!(meta.len(), 2, "{meta:?}");
        assert_eq!(params.traceparent(), Some(TRACEPARENT));

        let wire = serde_json::to_value(call_message(params.clone())).unwrap_or_default();
        assert_eq!(wire["params"]["_meta"]["traceparent"], TRACEPARENT);
        assert_eq!(wire["params"]["_meta"]["tracestate"], "k=v");

        let mut headers = HashMap::new();
        add_trace_headers(&call_message(params), &mut headers);
        assert_eq!(headers.len(), 2);
        assert_eq!(
            headers.get(&HeaderName::from_static("traceparent")),
            Some(&HeaderValue::from_static(TRACEPARENT))
        );
    }

    #[test]
    fn no_context_no_meta() {
        // No propagator is installed in this process's unit tests: nothing
        // is written, and the request keeps no empty `_meta`.
        let mut params = CallToolRequestParams::new("t");
        inject_current_context(&mut params);
        assert!(params.meta.is_none());
        let mut headers = HashMap::new();
        add_trace_headers(&call_message(params), &mut headers);
        assert!(headers.is_empty());
    }
}
