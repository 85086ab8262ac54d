//! Shared helpers of the integration tests: finding the provisioned external
//! servers, free ports, process checks.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[allow(unused_imports)] // not every test binary needs them
pub use looopy_testkit::external::{repo_root, require};

/// The Python of the provisioned venv (has the `mcp` package).
pub fn python() -> Option<PathBuf> {
    require(
        "LOOOPY_MCP_PYTHON",
        repo_root().join(".tools/venv/bin/python"),
        "the Python venv with the `mcp` package",
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
}

impl HttpFixture {
    /// Starts the fixture server over streamable HTTP.
    pub async fn start(python: &Path) -> Self {
        let port = free_port();
        let child = tokio::process::Command::new(python)
            .arg(fixture_server())
            .arg("http")
            .arg(port.to_string())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        wait_for_port(port).await;
        HttpFixture {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

/// `mcp-server-everything` from npm.
pub fn server_everything() -> Option<PathBuf> {
    require(
        "LOOOPY_MCP_EVERYTHING",
        repo_root().join(".tools/node/node_modules/.bin/mcp-server-everything"),
        "@modelcontextprotocol/server-everything",
    )
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

/// Whether a process runs (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits until the process is gone (at most 20 s); false if it never went.
pub async fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

/// Kills a process hard.
pub fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {pid} failed");
}
