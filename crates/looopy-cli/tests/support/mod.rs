//! Running the `looopy` binary in tests: a config file, `looopy serve` on a
//! free port, a graceful stop.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_looopy");

/// Writes `looopy.toml` with `body` into `dir`.
pub fn write_config(dir: &tempfile::TempDir, body: &str) -> PathBuf {
    let path = dir.path().join("looopy.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// Starts `looopy serve --config <config>` on a free port, without the
/// caller's LLM and OTLP variables (plus `extra_env`), and waits for its
/// "listening" line. Returns the process and its `http://` URL.
pub fn serve(config: &Path, extra_env: &[(&str, &str)]) -> (Child, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--config"])
        .arg(config)
        .args(["--bind", "127.0.0.1:0"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("LOOOPY_LLM_BASE_URL")
        .env_remove("LOOOPY_LLM_MODEL");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    // LOOOPY_TEST_SERVER_LOGS=1 shows the servers' logs, for debugging.
    let stderr = if std::env::var_os("LOOOPY_TEST_SERVER_LOGS").is_some() {
        Stdio::inherit()
    } else {
        Stdio::null()
    };
    let mut child = cmd.stdout(Stdio::piped()).stderr(stderr).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("looopy listening on ")
        .expect("listening line")
        .to_owned();
    (child, url)
}

/// SIGTERM (graceful shutdown), then waits at most 20 s for the exit.
pub fn stop(mut child: Child) -> ExitStatus {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "looopy serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What an OTLP/HTTP receiver got, one export request after another.
pub type Received = std::sync::Arc<
    std::sync::Mutex<
        Vec<opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest>,
    >,
>;

/// An OTLP/HTTP receiver on a free port (traces kept, metrics and logs
/// accepted and dropped); returns its base URL and what it receives.
pub async fn otlp_receiver() -> (String, Received) {
    use axum::body::Bytes;
    use axum::routing::post;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;

    let received: Received = Received::default();
    let sink = received.clone();
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            post(move |body: Bytes| {
                let sink = sink.clone();
                async move {
                    sink.lock()
                        .unwrap()
                        .push(ExportTraceServiceRequest::decode(body).unwrap());
                    ""
                }
            }),
        )
        .route("/v1/metrics", post(|| async { "" }))
        .route("/v1/logs", post(|| async { "" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), received)
}

/// Every span the receiver got so far, in arrival order.
pub fn exported_spans(received: &Received) -> Vec<opentelemetry_proto::tonic::trace::v1::Span> {
    received
        .lock()
        .unwrap()
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| ss.spans.iter().cloned())
        .collect()
}
