//! Spans of a real turn reach an OTLP/HTTP receiver, all in one trace.
#![allow(clippy::unwrap_used)]

use crate::support;

use futures::StreamExt;
use looopy_cli::telemetry::{LogFormat, OtlpConfig, Telemetry, TelemetryConfig};
use looopy_core::{History, LlmResponse, Message, TurnContext};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_exported_over_otlp_http_with_one_trace_id() {
    let (otlp, received) = support::otlp_receiver().await;

    let telemetry = Telemetry::init(&TelemetryConfig {
        otlp: OtlpConfig::http(&otlp),
        log_format: LogFormat::Json,
        ..TelemetryConfig::default()
    })
    .unwrap();
    assert!(telemetry.exporting());
    // The propagator is W3C trace context and baggage together.
    let fields: Vec<String> =
        opentelemetry::global::get_text_map_propagator(|p| p.fields().map(str::to_owned).collect());
    for field in ["traceparent", "tracestate", "baggage"] {
        assert!(fields.iter().any(|f| f == field), "{fields:?}");
    }

    let llm = ScriptedLlm::new().respond(LlmResponse::text("exported"));
    let agent = AgentLoop::builder(llm).agent_id("otlp-test").build();
    let mut events = agent.start_turn(
        History::from(vec![Message::user("hi")]),
        TurnContext::new("t", "c"),
    );
    while events.next().await.is_some() {}

    // Shutting down flushes the batch processor (a blocking call).
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap();

    let spans = support::exported_spans(&received);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"invoke_agent otlp-test"), "{names:?}");
    assert!(names.contains(&"iteration 1"), "{names:?}");
    assert!(names.contains(&"chat scripted"), "{names:?}");
    let trace_ids: std::collections::HashSet<&Vec<u8>> =
        spans.iter().map(|s| &s.trace_id).collect();
    assert_eq!(trace_ids.len(), 1, "one trace for the whole turn");
}
