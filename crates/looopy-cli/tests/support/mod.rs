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

/// A `looopy.toml` in a new temp folder (removed when the returned guard
/// drops): an `[llm]` section naming the fixture `llm`'s endpoint and
/// `model`, then `rest` (more `[llm]` keys first, then other sections).
pub fn config_with_model(
    llm: &looopy_testkit::OpenAiFixture,
    model: &str,
    rest: &str,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "[llm]\nbase_url = \"{}\"\nmodel = \"{model}\"\n{rest}",
        llm.base_url()
    );
    let config = write_config(&dir, &body);
    (dir, config)
}

/// Starts `looopy serve --config <config>` on a free port, in the config's
/// folder (where the default store keeps its database), without the
/// caller's LLM and OTLP variables (plus `extra_env`), and waits for its
/// "listening" line. Returns the process and its `http://` URL.
pub fn serve(config: &Path, extra_env: &[(&str, &str)]) -> (Child, String) {
    serve_with_args(config, &[], extra_env)
}

/// [`serve`] with more arguments after `serve` and its `--config`
/// (`--store memory`, `--model ...`).
pub fn serve_with_args(
    config: &Path,
    args: &[&str],
    extra_env: &[(&str, &str)],
) -> (Child, String) {
    let mut cmd = Command::new(BIN);
    // In the config's (temp) folder: the default SQLite store is kept
    // there, one per test.
    if let Some(dir) = config.parent() {
        cmd.current_dir(dir);
    }
    cmd.args(["serve", "--config"])
        .arg(config)
        .args(args)
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

/// A child process killed when dropped, so that a failing test leaves no
/// `looopy` running (and holding its output pipes open).
pub struct Running(Option<Child>);

impl Running {
    /// Guards `child`.
    pub fn new(child: Child) -> Self {
        Running(Some(child))
    }

    /// Stops it gracefully ([`stop`]).
    pub fn stop(mut self) -> ExitStatus {
        stop(self.0.take().unwrap())
    }

    /// Waits for it to exit on its own.
    pub fn wait(mut self) -> ExitStatus {
        self.0.take().unwrap().wait().unwrap()
    }
}

impl std::ops::Deref for Running {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().unwrap()
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// [`serve`], guarded.
pub fn serve_running(config: &Path, extra_env: &[(&str, &str)]) -> (Running, String) {
    let (child, url) = serve(config, extra_env);
    (Running::new(child), url)
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

/// A child's output as it arrives (read on threads of its own).
#[derive(Clone, Default)]
pub struct Captured {
    bytes: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    /// The reader saw the end of the output.
    closed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Captured {
    /// Reads `from` until it closes.
    pub fn spawn(mut from: impl std::io::Read + Send + 'static) -> Captured {
        let captured = Captured::default();
        let sink = captured.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.bytes.lock().unwrap().extend_from_slice(&buf[..n]);
            }
            sink.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        captured
    }

    /// Everything so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap()).into_owned()
    }

    /// All of it, once the output closed (at most 30 s): after the child
    /// exited, its last bytes may still be on their way to the reader.
    pub fn to_end(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the output did not close in 30 s; got: {}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        self.text()
    }

    /// Waits (at most 30 s) until the output contains `needle`.
    pub fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = self.text();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "waited 30 s for {needle:?}; got: {text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Sends SIGINT (what Ctrl-C does) to a process.
pub fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// What an OTLP receiver got in logs, one export request after another.
pub type ReceivedLogs = std::sync::Arc<
    std::sync::Mutex<
        Vec<opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest>,
    >,
>;

/// Every log record received so far: (its severity text, its body as text).
pub fn exported_logs(received: &ReceivedLogs) -> Vec<(String, String)> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    received
        .lock()
        .unwrap()
        .iter()
        .flat_map(|r| &r.resource_logs)
        .flat_map(|rl| &rl.scope_logs)
        .flat_map(|sl| &sl.log_records)
        .map(|l| {
            let body = match l.body.as_ref().and_then(|b| b.value.as_ref()) {
                Some(Value::StringValue(s)) => s.clone(),
                other => format!("{other:?}"),
            };
            (l.severity_text.clone(), body)
        })
        .collect()
}

/// The string attributes of the resources that sent the spans received.
pub fn resource_attributes(received: &Received) -> Vec<std::collections::BTreeMap<String, String>> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    received
        .lock()
        .unwrap()
        .iter()
        .flat_map(|r| &r.resource_spans)
        .filter_map(|rs| rs.resource.as_ref())
        .map(|r| {
            r.attributes
                .iter()
                .filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
                    Value::StringValue(s) => Some((kv.key.clone(), s.clone())),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// An OTLP/gRPC receiver (the collector's trace and logs services) on a
/// free port; returns its URL and what it receives.
pub async fn otlp_grpc_receiver() -> (String, Received, ReceivedLogs) {
    use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
        LogsService, LogsServiceServer,
    };
    use opentelemetry_proto::tonic::collector::logs::v1::{
        ExportLogsServiceRequest, ExportLogsServiceResponse,
    };
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
        TraceService, TraceServiceServer,
    };
    use opentelemetry_proto::tonic::collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
    };

    struct Traces(Received);
    #[tonic::async_trait]
    impl TraceService for Traces {
        async fn export(
            &self,
            request: tonic::Request<ExportTraceServiceRequest>,
        ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
            self.0.lock().unwrap().push(request.into_inner());
            Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
        }
    }
    struct Logs(ReceivedLogs);
    #[tonic::async_trait]
    impl LogsService for Logs {
        async fn export(
            &self,
            request: tonic::Request<ExportLogsServiceRequest>,
        ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
            self.0.lock().unwrap().push(request.into_inner());
            Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
        }
    }

    let traces = Received::default();
    let logs = ReceivedLogs::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(Traces(traces.clone())))
        .add_service(LogsServiceServer::new(Logs(logs.clone())));
    tokio::spawn(async move {
        router
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .unwrap();
    });
    (format!("http://{addr}"), traces, logs)
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
    let (url, traces, _) = otlp_http_receiver().await;
    (url, traces)
}

/// An OTLP/HTTP receiver on a free port keeping traces and logs (metrics
/// accepted and dropped); returns its base URL and what it receives.
pub async fn otlp_http_receiver() -> (String, Received, ReceivedLogs) {
    use axum::body::Bytes;
    use axum::routing::post;
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;

    let received: Received = Received::default();
    let sink = received.clone();
    let logs = ReceivedLogs::default();
    let log_sink = logs.clone();
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
        .route(
            "/v1/logs",
            post(move |body: Bytes| {
                let sink = log_sink.clone();
                async move {
                    sink.lock()
                        .unwrap()
                        .push(ExportLogsServiceRequest::decode(body).unwrap());
                    ""
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), received, logs)
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

/// What a scripted model reads of an OpenAI chat request: the text of the
/// last user message (the job it is asked to do), and the text of each
/// tool result that came after it.
pub fn last_user_turn(body: &serde_json::Value) -> (String, Vec<String>) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let Some(last_user) = messages.iter().rposition(|m| m["role"] == "user") else {
        return (String::new(), Vec::new());
    };
    let results = messages[last_user..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(message_text)
        .collect();
    (message_text(&messages[last_user]), results)
}

/// An OpenAI-compatible model that answers each chat request `body` with
/// `model(body)`, at once.
pub async fn model_answering(
    model: fn(&serde_json::Value) -> looopy_testkit::FixtureReply,
) -> looopy_testkit::OpenAiFixture {
    let respond: looopy_testkit::openai_fixture::Responder = std::sync::Arc::new(model);
    looopy_testkit::OpenAiFixture::start_responder(Duration::ZERO, respond)
        .await
        .unwrap()
}

/// The `looopy.toml` section of the MCP server
/// `tests/fixtures/durable_tools.py` run by `python`, its tools writing
/// what they do to `journal`; `env` adds to its environment (TOML pairs,
/// `KEY = "value", …`).
pub fn durable_tools_section(python: &Path, journal: &Journal, env: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/durable_tools.py");
    let env = if env.is_empty() {
        String::new()
    } else {
        format!(", {env}")
    };
    format!(
        "[[tools.mcp]]\nname = \"durable\"\ncommand = \"{}\"\nargs = [\"{}\"]\nenv = {{ JOURNAL = \"{}\"{env} }}\n",
        python.display(),
        script.display(),
        journal.path().display(),
    )
}

/// The Python of `.tools/venv` (a2a-sdk 1.x and `mcp`), provisioned by
/// `scripts/provision.sh python`.
pub fn python() -> Option<PathBuf> {
    looopy_testkit::external::require(
        "LOOOPY_A2A_PYTHON",
        looopy_testkit::external::repo_root().join(".tools/venv/bin/python"),
        "the Python venv with a2a-sdk 1.x and mcp",
    )
}

/// The Python of `.tools/venv-a2a03` (a2a-sdk 0.3.x).
pub fn python_a2a03() -> Option<PathBuf> {
    looopy_testkit::external::require(
        "LOOOPY_A2A03_PYTHON",
        looopy_testkit::external::repo_root().join(".tools/venv-a2a03/bin/python"),
        "the Python venv with a2a-sdk 0.3.x",
    )
}

/// The JSON a fixture script printed on its last line; the script must
/// have succeeded.
pub fn json_output(out: &std::process::Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// The file `tests/fixtures/durable_tools.py` writes a line to for each
/// step of its tools (`JOURNAL` in its environment).
pub struct Journal(PathBuf);

impl Journal {
    /// An empty journal in `dir`.
    pub fn create(dir: &Path) -> Journal {
        let path = dir.join("journal.txt");
        std::fs::write(&path, "").unwrap();
        Journal(path)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Its lines so far.
    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The text of an OpenAI chat message's content (a string or text parts),
/// as a scripted model reads the messages it is sent.
pub fn message_text(message: &serde_json::Value) -> String {
    match &message["content"] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Presses Ctrl-C in a `looopy chat` session (see [`chat_on_pty`]) until
/// it ends (the prompt takes it once it is back), at most 30 s; its exit
/// status.
pub fn ctrl_c_until_it_leaves(chat: &mut Running, master: &mut std::fs::File) -> ExitStatus {
    use std::io::Write;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        master.write_all(b"\x03").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        if let Some(status) = chat.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "Ctrl-C did not end the session");
    }
}

/// `looopy chat <url>` on a pseudo-terminal, as a person runs it, with
/// `LOOOPY_TOKEN` set to `token` (or unset): the child, the terminal's
/// master side to type into, and what the screen shows.
pub fn chat_on_pty(url: &str, token: Option<&str>) -> (Running, std::fs::File, Captured) {
    let pty = nix::pty::openpty(None, None).unwrap();
    let slave = std::fs::File::from(pty.slave);
    let mut command = Command::new(BIN);
    command
        .args(["chat", url])
        .env("TERM", "xterm")
        .env_remove("RUST_LOG")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    match token {
        Some(token) => command.env("LOOOPY_TOKEN", token),
        None => command.env_remove("LOOOPY_TOKEN"),
    };
    let child = Running::new(command.spawn().unwrap());
    let master = std::fs::File::from(pty.master);
    let screen = Captured::spawn(master.try_clone().unwrap());
    (child, master, screen)
}

/// Runs the browser script `tests/fixtures/<script>` (headless Chromium,
/// see `fixtures/browser.cjs`) against the chat page of `server` at `url`,
/// with `URL`, `TOKEN` and the `extra` variables in its environment; then
/// stops the server and asserts that every check of the script held.
pub async fn run_page_script(
    browser: &looopy_testkit::external::Browser,
    script: &str,
    server: Running,
    url: &str,
    token: &str,
    extra: &[(&str, &Path)],
) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(script);
    let mut env: Vec<(&str, &dyn AsRef<std::ffi::OsStr>)> = vec![("URL", &url), ("TOKEN", &token)];
    env.extend(
        extra
            .iter()
            .map(|(k, v)| (*k, v as &dyn AsRef<std::ffi::OsStr>)),
    );
    let run = browser
        .run_script(&script, &env, Duration::from_secs(180))
        .await
        .unwrap();
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    assert!(run.all_ok(), "the browser script failed: {run:?}");
}

/// The `[[tools.mcp]]` section of looopy-tools' Python fixture server
/// (`crates/looopy-tools/tests/fixtures/mcp_server.py`) over stdio, named
/// `name`, run by `python`.
pub fn mcp_fixture_section(python: &Path, name: &str) -> String {
    let script = looopy_testkit::external::repo_root()
        .join("crates/looopy-tools/tests/fixtures/mcp_server.py");
    format!(
        "[[tools.mcp]]\nname = \"{name}\"\ncommand = \"{}\"\nargs = [\"{}\", \"stdio\"]\n",
        python.display(),
        script.display()
    )
}
