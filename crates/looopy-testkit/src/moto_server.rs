//! [`MotoServer`]: a throw-away S3-compatible server for the blob store's
//! tests, `moto_server` from PyPI's `moto[server]` (installed into
//! `.tools/venv` by `scripts/provision.sh python`).
//!
//! It listens on a free loopback port, keeps everything in memory, and is
//! killed when its guard drops. [`MotoServer::start_checking_credentials`]
//! starts one that checks every request's access key, so that a test can
//! see S3 answer 403.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::external::{repo_root, require};

const STARTUP: Duration = Duration::from_secs(30);

/// The access key id and secret the tests sign with (moto accepts any
/// unless it checks credentials).
pub const MOTO_ACCESS_KEY_ID: &str = "looopy-test";
/// See [`MOTO_ACCESS_KEY_ID`].
pub const MOTO_SECRET_ACCESS_KEY: &str = "looopy-test-secret";

/// The provisioned `moto_server` (`$LOOOPY_MOTO_SERVER` when set), found as
/// [`require`] finds programs: `None` only when `LOOOPY_SKIP_EXTERNAL=1`
/// and it is missing.
pub fn moto_server_bin() -> Option<PathBuf> {
    require(
        "LOOOPY_MOTO_SERVER",
        repo_root().join(".tools/venv/bin/moto_server"),
        "moto_server (PyPI moto[server])",
    )
}

/// A `moto_server` child process on a loopback port; killed on drop.
#[derive(Debug)]
pub struct MotoServer {
    child: Option<Child>,
    port: u16,
}

impl MotoServer {
    /// Starts a server that accepts any credentials on a free port and
    /// waits until it answers. `Ok(None)` when moto is not installed and
    /// `LOOOPY_SKIP_EXTERNAL=1`.
    pub fn start() -> io::Result<Option<Self>> {
        Self::start_with(false)
    }

    /// Starts a server that checks every request's access key against its
    /// (empty) IAM: every signed request is refused with 403.
    pub fn start_checking_credentials() -> io::Result<Option<Self>> {
        Self::start_with(true)
    }

    fn start_with(check_credentials: bool) -> io::Result<Option<Self>> {
        let Some(bin) = moto_server_bin() else {
            return Ok(None);
        };
        let mut last = None;
        // The free port may be taken between probing and binding: try again.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            match Self::spawn(&bin, port, check_credentials) {
                Ok(server) => return Ok(Some(server)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("moto_server did not start")))
    }

    fn spawn(bin: &std::path::Path, port: u16, check_credentials: bool) -> io::Result<Self> {
        let mut command = Command::new(bin);
        command
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if check_credentials {
            // Authentication starts after this many requests: at once.
            command.env("INITIAL_NO_AUTH_ACTION_COUNT", "0");
        }
        let child = command.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "could not run {} ({e}); run `scripts/provision.sh python`",
                    bin.display()
                ),
            )
        })?;
        let mut server = MotoServer {
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline {
            if let Some(child) = &mut server.child
                && let Some(status) = child.try_wait()?
            {
                server.child = None;
                return Err(io::Error::other(format!(
                    "moto_server on port {port} exited at once ({status})"
                )));
            }
            if server.request("GET", "/moto-api/").is_ok() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        server.kill();
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("moto_server did not answer on port {port} in time"),
        ))
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates bucket `name` (an unsigned request, which a server started
    /// by [`start`](Self::start) accepts).
    pub fn create_bucket(&self, name: &str) -> io::Result<()> {
        let status = self.request("PUT", &format!("/{name}"))?;
        if status == 200 {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "creating bucket `{name}` answered {status}"
            )))
        }
    }

    /// Sends an empty unsigned request, returning the status code.
    fn request(&self, method: &str, path: &str) -> io::Result<u16> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        reply
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| io::Error::other(format!("not an HTTP answer: {reply:.80}")))
    }

    /// Kills the server and waits for it to exit. Everything stored is lost.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        self.kill();
    }
}
