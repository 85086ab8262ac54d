//! A throw-away Redis server and Redis Cluster for the test run.

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

/// A Redis Cluster of three masters (`scripts/redis-cluster.sh`); stopped
/// when dropped.
pub(crate) struct RedisCluster {
    dir: std::path::PathBuf,
    /// The node URLs, comma-separated.
    pub(crate) urls: String,
}

impl RedisCluster {
    /// Starts one and waits until its state is `ok`.
    pub(crate) fn start() -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("looopy-redis-cluster-{}", std::process::id()));
        let script = crate::util::root().join("scripts/redis-cluster.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg("start")
            .arg(&dir)
            .stderr(Stdio::inherit())
            .output()
            .context("could not run scripts/redis-cluster.sh")?;
        // Whatever happened, stop what may have started.
        let cluster = RedisCluster {
            dir,
            urls: String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        };
        if !out.status.success() || cluster.urls.is_empty() {
            bail!("scripts/redis-cluster.sh start failed (run scripts/provision.sh redis)");
        }
        eprintln!("[xtask] redis cluster up at {}", cluster.urls);
        Ok(cluster)
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        let script = crate::util::root().join("scripts/redis-cluster.sh");
        let _ = Command::new("bash")
            .arg(script)
            .arg("stop")
            .arg(&self.dir)
            .status();
        eprintln!("[xtask] redis cluster at {} stopped", self.urls);
    }
}
