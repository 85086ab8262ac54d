//! W3C trace context: the client and `RemoteAgentTools` write `traceparent`,
//! the server's request span continues the caller's trace (feature `otel`).
//! Alone in its binary: the test installs a thread-local subscriber, which
//! spans of tests running beside it could miss.
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used)]

mod support;

use looopy_a2a::{A2aClient, RemoteAgentTools, SendRequest};
use looopy_core::{ToolCall, ToolProvider, TurnContext};
use looopy_testkit::{SpanCapture, attribute as attr};
use opentelemetry::Value;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::trace::SpanData;
use support::*;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

// One thread, so that the server's spans see the thread-local subscriber.
#[tokio::test(flavor = "current_thread")]
async fn the_server_continues_the_callers_trace() {
    let capture = SpanCapture::install();
    let server = start(ScriptedRunner::hello()).await;
    let client = A2aClient::new(&server.url);
    let parent = tracing::info_span!("caller");
    let trace_id = parent.context().span().span_context().trace_id();
    let parent_id = parent.context().span().span_context().span_id();
    async {
        client.send(&SendRequest::text("hi")).await.unwrap();
        let tool = RemoteAgentTools::new(client.clone(), "remote", "x");
        let r = tool
            .execute(
                &ToolCall::new("1", "remote", r#"{"message":"again"}"#),
                &TurnContext::new("t", "c"),
            )
            .await;
        assert!(!r.is_error, "{}", r.text_content());
    }
    .instrument(parent.clone())
    .await;
    drop(parent);
    // The turns' spans close when the turns have recorded their end.
    for _ in 0..500 {
        let spans = capture.spans();
        if spans.iter().filter(|s| s.name == "a2a.turn").count() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let spans = capture.spans();
    let requests: Vec<&SpanData> = spans
        .iter()
        .filter(|s| attr(s, "a2a.method.name").is_some())
        .collect();
    assert!(
        requests.len() >= 2,
        "{:#?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for r in &requests {
        assert_eq!(
            r.span_context.trace_id(),
            trace_id,
            "{} is in the caller's trace",
            r.name
        );
    }
    let send = requests
        .iter()
        .find(|s| attr(s, "a2a.method.name") == Some(&Value::from("SendMessage")))
        .unwrap();
    assert_eq!(
        send.parent_span_id, parent_id,
        "the request span's parent is the caller's span"
    );
    assert_eq!(send.name, "A2A SendMessage");
    assert!(attr(send, "a2a.task.id").is_some());
    assert_eq!(
        attr(send, "a2a.task.state"),
        Some(&Value::from("completed"))
    );
    // The streamed call of the tool ran under its own span, in the same trace.
    let stream = requests
        .iter()
        .find(|s| attr(s, "a2a.method.name") == Some(&Value::from("SendStreamingMessage")))
        .unwrap();
    let tool_span = spans.iter().find(|s| s.name == "a2a.remote_agent").unwrap();
    assert_eq!(stream.parent_span_id, tool_span.span_context.span_id());
    assert_eq!(
        attr(tool_span, "a2a.task.state"),
        Some(&Value::from("completed"))
    );
    // The turn spans follow their request.
    assert!(
        spans
            .iter()
            .any(|s| s.name == "a2a.turn" && s.span_context.trace_id() == trace_id)
    );
}
