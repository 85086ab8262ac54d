//! The tool-progress extension's trace id with OpenTelemetry on: the
//! request's trace. Alone in its binary: the test installs a thread-local
//! subscriber, which spans of tests running beside it could miss.
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used)]

mod support;

use looopy_a2a::TOOL_PROGRESS_EXTENSION;
use looopy_testkit::SpanCapture;
use support::*;

/// With OpenTelemetry the trace id is the request's trace (here the
/// caller's `traceparent`).
#[tokio::test(flavor = "current_thread")]
async fn the_trace_id_is_the_requests_trace_when_tracing() {
    let _capture = SpanCapture::install();

    let server = start(ScriptedRunner::hello()).await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let events = sse(
        &server.url,
        Some("1.0"),
        &[
            ("A2A-Extensions", TOOL_PROGRESS_EXTENSION),
            ("traceparent", &traceparent),
        ],
        "SendStreamingMessage",
        v1_message("x"),
    )
    .await
    .rest()
    .await;
    let start = events
        .iter()
        .find_map(|e| {
            let update = e.data["result"].get("statusUpdate")?;
            update["metadata"].get(TOOL_PROGRESS_EXTENSION)?;
            Some(update["status"]["message"]["parts"][0]["data"].clone())
        })
        .unwrap();
    assert_eq!(start["event"], "turn-start");
    assert_eq!(start["traceId"], trace_id);
    assert_eq!(start["traceIdGenerated"], false);
}
