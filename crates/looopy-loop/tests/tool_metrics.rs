//! The `looopy.tool.duration` metric: one data point per tool call, by tool
//! name, with the typed failure as `error.type` (a timeout reads `timeout`).
//! In its own test binary because it installs the global meter provider.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use looopy_core::{History, Message, ToolResult, TurnContext};
use looopy_loop::AgentLoop;
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use support::*;

/// `(tool name, error.type, count)` of every `looopy.tool.duration` point.
fn tool_points(exported: &[ResourceMetrics]) -> Vec<(String, Option<String>, u64)> {
    let mut points = Vec::new();
    for resource in exported {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                if metric.name() != "looopy.tool.duration" {
                    continue;
                }
                let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() else {
                    panic!("looopy.tool.duration is not an f64 histogram");
                };
                for p in h.data_points() {
                    let attr = |key: &str| {
                        p.attributes()
                            .find(|kv: &&KeyValue| kv.key.as_str() == key)
                            .map(|kv| kv.value.to_string())
                    };
                    points.push((
                        attr("gen_ai.tool.name").unwrap(),
                        attr("error.type"),
                        p.count(),
                    ));
                }
            }
        }
    }
    points.sort();
    points
}

#[tokio::test(flavor = "multi_thread")]
async fn each_tool_call_is_measured_with_its_failure_kind() {
    let (exporter, provider) = install_metrics();

    let tools = FnTools::new()
        .tool("hang", |call, _| async move {
            std::future::pending::<()>().await;
            ToolResult::text(&call.id, "never")
        })
        .echo("echo", Duration::ZERO);
    let llm = calls_then(
        &[
            ("h1", "hang", "{}"),
            ("e1", "echo", "{}"),
            ("e2", "echo", "{}"),
        ],
        "done",
    );
    // Instruments are taken from the global provider when the loop is built.
    let agent = AgentLoop::builder(llm)
        .tools(tools)
        .tool_timeout(Some(Duration::from_millis(50)))
        .build();
    drain(agent.start_turn(
        History::from(vec![Message::user("go")]),
        TurnContext::new("t-metrics", "c-metrics"),
    ))
    .await;

    provider.force_flush().unwrap();
    let points = tool_points(&exporter.get_finished_metrics().unwrap());
    assert_eq!(
        points,
        [
            ("echo".to_string(), None, 2),
            ("hang".to_string(), Some("timeout".to_string()), 1),
        ]
    );
}
