//! A throw-away Redis server for the test run.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A redis-server on a free loopback port; stopped when dropped.
pub(crate) struct RedisServer {
    child: Child,
    /// `redis://127.0.0.1:<port>`.
    pub(crate) url: String,
    dir: std::path::PathBuf,
}

impl RedisServer {
    /// Starts one and waits until it answers.
    pub(crate) fn start() -> Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir = std::env::temp_dir().join(format!("looopy-redis-{port}"));
        std::fs::create_dir_all(&dir)?;
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("could not start redis-server (run scripts/provision.sh redis)")?;
        let server = RedisServer {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                eprintln!("[xtask] redis-server up at {}", server.url);
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("redis-server did not answer on port {port} within 10 s")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        eprintln!("[xtask] redis-server at {} stopped", self.url);
    }
}
