//! Shared helpers of the integration tests: finding the provisioned external
//! servers, free ports, process checks.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use looopy_core::{ToolCall, ToolProvider, ToolResult, TurnContext};
#[allow(unused_imports)] // not every test binary needs them
pub use looopy_testkit::external::{
    mcp_server_everything as server_everything, process_alive as alive, process_ends_within,
    repo_root, require,
};

/// The Python of the provisioned venv (has the `mcp` package).
pub fn python() -> Option<PathBuf> {
    require(
        "LOOOPY_MCP_PYTHON",
        repo_root().join(".tools/venv/bin/python"),
        "the Python venv with the `mcp` package",
    )
}

/// The fixture server over stdio, with names prefixed `py_` (`None` when
/// there is no provisioned Python and external tests are skipped).
#[cfg(feature = "mcp")]
pub fn stdio_provider() -> Option<looopy_tools::McpToolProvider> {
    let python = python()?;
    let server = looopy_tools::StdioServer::new(python)
        .arg(fixture_server().display().to_string())
        .arg("stdio")
        .env("PYTHONUNBUFFERED", "1");
    Some(
        looopy_tools::McpToolProvider::new(server)
            .with_name("py")
            .with_prefix("py_"),
    )
}

/// The fixture server script.
pub fn fixture_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py")
}

/// A Python server over streamable HTTP on a free port; killed on drop.
pub struct HttpFixture {
    /// The server process.
    pub child: tokio::process::Child,
    /// Its endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// Its port.
    pub port: u16,
}

impl HttpFixture {
    /// Starts the fixture server over streamable HTTP on a free port.
    pub async fn start(python: &Path) -> Self {
        Self::start_on(python, free_port()).await
    }

    /// Starts the fixture server over streamable HTTP on `port`.
    pub async fn start_on(python: &Path, port: u16) -> Self {
        let port_arg = port.to_string();
        Self::spawn(python, &fixture_server(), &["http", &port_arg], port).await
    }

    /// Starts the OAuth fixture (tests/fixtures/oauth_mcp_server.py: an MCP
    /// server that requires bearer tokens, and the authorization server
    /// that issues them, each token living `lifetime_secs`) on a free port.
    pub async fn start_oauth(python: &Path, lifetime_secs: u64) -> Self {
        let port = free_port();
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oauth_mcp_server.py");
        let (port_arg, lifetime_arg) = (port.to_string(), lifetime_secs.to_string());
        Self::spawn(python, &script, &[&port_arg, &lifetime_arg], port).await
    }

    /// Runs `script` with `args` and waits until it listens on `port`.
    async fn spawn(python: &Path, script: &Path, args: &[&str], port: u16) -> Self {
        let child = tokio::process::Command::new(python)
            .arg(script)
            .args(args)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        wait_for_port(port).await;
        HttpFixture {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            port,
        }
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on the port (at most 30 s).
pub async fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        assert!(Instant::now() < deadline, "nothing listens on port {port}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the process is gone (at most 20 s); false if it never went.
pub async fn wait_gone(pid: u32) -> bool {
    process_ends_within(pid, Duration::from_secs(20)).await
}

/// The context of the tests' calls.
pub fn cx() -> TurnContext {
    TurnContext::new("t", "c")
}

/// `tools` runs the call `id` of `name` with `arguments` (JSON text).
pub async fn call(tools: &impl ToolProvider, id: &str, name: &str, arguments: &str) -> ToolResult {
    tools
        .execute(&ToolCall::new(id, name, arguments), &cx())
        .await
}

/// Makes `call` until it succeeds, after the server was killed: the call
/// that finds the dead server fails as unavailable (one such call at the
/// most), the next one reaches a new server.
pub async fn call_after_crash(tools: &impl ToolProvider, call: &ToolCall) -> ToolResult {
    let mut failures = 0;
    loop {
        let r = tools.execute(call, &cx()).await;
        if !r.is_error {
            return r;
        }
        assert!(
            r.text_content().contains("unavailable"),
            "{}",
            r.text_content()
        );
        failures += 1;
        assert!(failures <= 1, "more than one failed call after the crash");
    }
}

/// Kills a process hard.
pub fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {pid} failed");
}
