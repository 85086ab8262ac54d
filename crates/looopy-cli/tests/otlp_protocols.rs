//! The binary's OTLP export follows the OpenTelemetry conventions: per-signal
//! endpoints win over the general one, `OTEL_EXPORTER_OTLP_PROTOCOL` picks
//! HTTP/protobuf or gRPC, logs leave through the OTel appender, and the
//! resource says `service.name = looopy` and `service.version` unless the
//! variables say otherwise. Each test runs `looopy run` against a receiver.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::process::{Command, Output};

use support::{BIN, exported_logs, exported_spans, resource_attributes};

/// `looopy run hello` with a model nobody serves (a failed turn: spans and
/// error logs) and these variables only, of the OTel ones.
async fn run_failing_turn(vars: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let config = support::write_config(
        &dir,
        "[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\nmax_retries = 0\n",
    );
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "--config"]).arg(&config).arg("hello");
    for (k, _) in std::env::vars() {
        if k.starts_with("OTEL_") || k.starts_with("LOOOPY_LLM") || k == "RUST_LOG" {
            cmd.env_remove(k);
        }
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    drop(dir);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_signal_http_endpoints_win_and_logs_and_resource_are_exported() {
    let (url, traces, logs) = support::otlp_http_receiver().await;
    let traces_url = format!("{url}/v1/traces");
    let logs_url = format!("{url}/v1/logs");
    let out = run_failing_turn(&[
        // Nothing listens here: only the per-signal endpoints can work.
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &traces_url),
        ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", &logs_url),
        ("OTEL_METRICS_EXPORTER", "none"),
    ])
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    // The terminal still shows one line; the logs went to the collector.
    assert_eq!(err.lines().count(), 1, "{err}");

    let names: Vec<String> = exported_spans(&traces)
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("invoke_agent")),
        "{names:?}"
    );
    let resources = resource_attributes(&traces);
    assert!(!resources.is_empty());
    for r in &resources {
        assert_eq!(r.get("service.name").map(String::as_str), Some("looopy"));
        assert_eq!(
            r.get("service.version").map(String::as_str),
            Some(env!("CARGO_PKG_VERSION"))
        );
    }
    let records = exported_logs(&logs);
    assert!(
        records.iter().any(|(severity, _)| severity == "ERROR"),
        "{records:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_exports_traces_and_logs_and_resource_attributes_name_the_service() {
    let (url, traces, logs) = support::otlp_grpc_receiver().await;
    let out = run_failing_turn(&[
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &url),
        ("OTEL_METRICS_EXPORTER", "none"),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "service.name=from-attributes,deployment.environment.name=ci",
        ),
    ])
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    let spans = exported_spans(&traces);
    assert!(
        spans.iter().any(|s| s.name.starts_with("invoke_agent")),
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let trace_ids: std::collections::HashSet<&Vec<u8>> =
        spans.iter().map(|s| &s.trace_id).collect();
    assert_eq!(trace_ids.len(), 1, "one trace for the turn");
    for r in resource_attributes(&traces) {
        assert_eq!(
            r.get("service.name").map(String::as_str),
            Some("from-attributes")
        );
        assert_eq!(
            r.get("deployment.environment.name").map(String::as_str),
            Some("ci")
        );
    }
    assert!(
        exported_logs(&logs).iter().any(|(s, _)| s == "ERROR"),
        "{:?}",
        exported_logs(&logs)
    );
}

#[test]
fn an_unknown_protocol_is_refused_in_one_line() {
    let out = Command::new(BIN)
        .args(["run", "hello"])
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim(),
        "looopy: OTEL_EXPORTER_OTLP_PROTOCOL=http/json: expected `http/protobuf` or `grpc`"
    );
}
