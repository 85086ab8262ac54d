//! [`RedisServer`]: a throw-away `redis-server` for tests, and
//! [`test_redis`], the Redis a test should use.
//!
//! `redis-server` is installed by `scripts/provision.sh redis`. The server
//! listens on a free loopback port, persists nothing, and is killed when its
//! guard drops. [`RedisServer::kill`] and [`RedisServer::restart`] (same
//! port) let outage tests take it away and bring it back.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that names a shared test Redis
/// (`cargo xtask ci` sets it).
pub const TEST_REDIS_URL_ENV: &str = "LOOOPY_TEST_REDIS_URL";

const STARTUP: Duration = Duration::from_secs(10);

/// A `redis-server` child process on a loopback port; killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts a server on a free port and waits until it answers `PING`.
    pub fn start() -> io::Result<Self> {
        let mut last = None;
        // The free port may be taken between probing and binding: try again.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            match Self::start_on(port) {
                Ok(server) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("redis-server did not start")))
    }

    /// Starts a server on `port` and waits until it answers `PING`.
    pub fn start_on(port: u16) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "looopy-test-redis-{}-{port}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let mut server = RedisServer {
            child: None,
            port,
            dir,
        };
        server.spawn()?;
        Ok(server)
    }

    fn spawn(&mut self) -> io::Result<()> {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("could not run redis-server ({e}); run `scripts/provision.sh redis`"),
                )
            })?;
        self.child = Some(child);
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline {
            if let Some(child) = &mut self.child
                && let Some(status) = child.try_wait()?
            {
                self.child = None;
                return Err(io::Error::other(format!(
                    "redis-server on port {} exited at once ({status})",
                    self.port
                )));
            }
            if ping(self.port) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("redis-server did not answer on port {} in time", self.port),
        ))
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id, while it runs (for tests that pause it with
    /// `SIGSTOP` to simulate a server that stops answering).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is running.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills the server (SIGKILL) and waits for it to exit. Data is lost.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (after [`kill`](Self::kill)),
    /// empty.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        self.spawn()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Sends `PING` and checks for `+PONG`.
fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

/// The Redis a test uses: the shared one named by
/// [`LOOOPY_TEST_REDIS_URL`](TEST_REDIS_URL_ENV) when set, otherwise a
/// server of its own (kept alive as long as this value).
#[derive(Debug)]
pub struct TestRedis {
    url: String,
    server: Option<RedisServer>,
}

impl TestRedis {
    /// The URL to connect to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server this test started, when it did not use a shared one.
    pub fn own_server(&self) -> Option<&RedisServer> {
        self.server.as_ref()
    }
}

/// The shared test Redis or, when none is named, a fresh server.
///
/// Tests must still write under a unique key prefix: the shared server is
/// used by every test of the run at once.
pub fn test_redis() -> io::Result<TestRedis> {
    match std::env::var(TEST_REDIS_URL_ENV) {
        Ok(url) if !url.trim().is_empty() => Ok(TestRedis { url, server: None }),
        _ => {
            let server = RedisServer::start()?;
            Ok(TestRedis {
                url: server.url(),
                server: Some(server),
            })
        }
    }
}
