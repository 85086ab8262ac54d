//! The model call metrics of the GenAI conventions: one
//! `gen_ai.client.operation.duration` point per call and two
//! `gen_ai.client.token.usage` points (input, output) per call that reports
//! usage, each with the model and provider names; a failed call carries its
//! `error.type` and no token points. In its own test binary because it
//! installs the global meter provider.
#![allow(clippy::unwrap_used)]

mod support;

use looopy_core::{History, LlmError, LlmResponse, Message, TurnContext, Usage};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use support::*;

/// A point: its attributes as `key=value`, sorted, then its count and sum.
type Point = (Vec<String>, u64, u64);

/// The points of one histogram, sorted.
fn points(exported: &[ResourceMetrics], name: &str) -> Vec<Point> {
    let mut points = Vec::new();
    for resource in exported {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics().filter(|m| m.name() == name) {
                let attrs = |it: &mut dyn Iterator<Item = &KeyValue>| {
                    let mut a: Vec<String> =
                        it.map(|kv| format!("{}={}", kv.key, kv.value)).collect();
                    a.sort();
                    a
                };
                match metric.data() {
                    AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            points.push((attrs(&mut p.attributes()), p.count(), p.sum()));
                        }
                    }
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            points.push((attrs(&mut p.attributes()), p.count(), 0));
                        }
                    }
                    _ => panic!("{name} is not a histogram"),
                }
            }
        }
    }
    points.sort();
    points
}

fn attrs(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_model_call_is_measured_with_its_model_provider_and_tokens() {
    let (exporter, provider) = install_metrics();

    let usage = |input, output| Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Default::default()
    };
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("one").with_usage(usage(10, 3)))
        .respond(LlmResponse::text("two").with_usage(usage(20, 4)))
        .fail(LlmError::BadRequest {
            message: "no".into(),
        });
    // Instruments are taken from the global provider when the loop is built.
    let agent = AgentLoop::builder(llm).build();
    for task in ["t1", "t2", "t3"] {
        drain(agent.start_turn(
            History::from(vec![Message::user("go")]),
            TurnContext::new(task, "c-metrics"),
        ))
        .await;
    }

    provider.force_flush().unwrap();
    let exported = exporter.get_finished_metrics().unwrap();
    let base = [
        "gen_ai.operation.name=chat",
        "gen_ai.provider.name=scripted",
        "gen_ai.request.model=scripted",
    ];
    let with = |extra: &str| {
        let mut a = attrs(&base);
        a.push(extra.to_owned());
        a.sort();
        a
    };
    assert_eq!(
        points(&exported, "gen_ai.client.operation.duration"),
        [(with("error.type=bad_request"), 1, 0), (attrs(&base), 2, 0),]
    );
    assert_eq!(
        points(&exported, "gen_ai.client.token.usage"),
        [
            (with("gen_ai.token.type=input"), 2, 30),
            (with("gen_ai.token.type=output"), 2, 7),
        ]
    );
}
