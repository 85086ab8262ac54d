//! [`PostgresServer`]: a throw-away PostgreSQL server for tests, and
//! [`test_postgres`], the PostgreSQL a test should use.
//!
//! The server comes from Debian's `postgresql` package (installed by
//! `scripts/provision.sh postgres`): `initdb` makes a cluster in a fresh
//! temporary directory, `pg_ctl` starts it on a free loopback port and
//! stops it when the guard drops (`-m immediate`: nothing in it is worth
//! keeping). PostgreSQL refuses to run as root, so when the tests run as
//! root every command runs as the `postgres` user the package creates
//! (`runuser -u postgres --`), in a directory that user owns. `fsync` is
//! off: a test server need not survive a power cut, only the crash of its
//! own process (what [`PostgresServer::stop`] does), and every commit is
//! written to the operating system before it returns.
//!
//! Tests share one server through [`TEST_POSTGRES_URL_ENV`] (`cargo xtask
//! ci` starts one for the whole run) and keep apart by writing in a schema
//! of their own.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that names a shared test PostgreSQL
/// (`postgres://user@host:port/db`; `cargo xtask ci` sets it).
pub const TEST_POSTGRES_URL_ENV: &str = "LOOOPY_TEST_POSTGRES_URL";

/// The environment variable that names the directory of PostgreSQL's
/// programs (`initdb`, `pg_ctl`), when they are not in
/// `/usr/lib/postgresql/<version>/bin`.
pub const POSTGRES_BIN_ENV: &str = "LOOOPY_POSTGRES_BIN";

const STARTUP: Duration = Duration::from_secs(30);

/// A PostgreSQL cluster in a temporary directory, served on a loopback
/// port; stopped and removed on drop.
#[derive(Debug)]
pub struct PostgresServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
    running: bool,
}

impl PostgresServer {
    /// Makes a cluster and starts it on a free port.
    pub fn start() -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let bin = bin_dir()?;
        let as_postgres = running_as_root();
        let dir = std::env::temp_dir().join(format!(
            "looopy-test-postgres-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let mut server = PostgresServer {
            bin,
            dir,
            port: 0,
            as_postgres,
            running: false,
        };
        if as_postgres {
            // The cluster's files must belong to the user that runs it.
            checked(
                Command::new("chown")
                    .arg("postgres:postgres")
                    .arg(&server.dir)
                    .output(),
                "chown the test cluster's directory to postgres",
            )?;
        }
        let data = server.data();
        let initdb = server
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output();
        checked(initdb, "initdb")?;
        let mut last = None;
        // The free port may be taken between probing and binding: try again.
        for _ in 0..3 {
            server.port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("postgres did not start")))
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A command of PostgreSQL's, run as `postgres` when this process is root.
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        };
        cmd.stdin(Stdio::null());
        cmd
    }

    fn spawn(&mut self) -> io::Result<()> {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off \
             -c full_page_writes=off -c max_connections=400",
            self.port,
            self.dir.display()
        );
        let start = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-o", &options, "-w", "-t"])
            .arg(STARTUP.as_secs().to_string())
            .arg("start")
            .output();
        if let Err(e) = checked(start, "pg_ctl start") {
            // Whatever started, stop it.
            self.running = true;
            self.stop();
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            return Err(io::Error::other(format!("{e}; server log:\n{log}")));
        }
        self.running = true;
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("postgres did not listen on port {} in time", self.port),
        ))
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the server runs.
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`: connections
    /// are cut, as when the server crashes). What was committed stays in
    /// the cluster, and [`restart`](Self::restart) serves it again.
    pub fn stop(&mut self) {
        if !self.running {
            return;
        }
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        self.running = false;
    }

    /// Starts the stopped server again on the same port, with its data.
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        self.spawn()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where `initdb` and `pg_ctl` are: [`POSTGRES_BIN_ENV`], else the newest
/// `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> io::Result<PathBuf> {
    if let Ok(dir) = std::env::var(POSTGRES_BIN_ENV)
        && !dir.trim().is_empty()
    {
        return Ok(PathBuf::from(dir));
    }
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "no PostgreSQL under {} ({e}); run `scripts/provision.sh postgres`",
                    root.display()
                ),
            )
        })?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no PostgreSQL server programs under /usr/lib/postgresql/*/bin; \
             run `scripts/provision.sh postgres`",
        )
    })
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn checked(output: io::Result<Output>, what: &str) -> io::Result<()> {
    let output = output.map_err(|e| io::Error::new(e.kind(), format!("{what}: {e}")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{what} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )))
}

/// The PostgreSQL a test uses: the shared one named by
/// [`LOOOPY_TEST_POSTGRES_URL`](TEST_POSTGRES_URL_ENV) when set, otherwise
/// a server of its own (kept alive as long as this value).
#[derive(Debug)]
pub struct TestPostgres {
    url: String,
    server: Option<PostgresServer>,
}

impl TestPostgres {
    /// The URL to connect to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server this test started, when it did not use a shared one.
    pub fn own_server(&self) -> Option<&PostgresServer> {
        self.server.as_ref()
    }

    /// The server this test started, to stop and restart it (it stops
    /// when dropped).
    pub fn into_server(self) -> Option<PostgresServer> {
        self.server
    }
}

/// The shared test PostgreSQL or, when none is named, a fresh server.
///
/// Tests must still write under a schema of their own: the shared server
/// is used by every test of the run at once.
pub fn test_postgres() -> io::Result<TestPostgres> {
    match std::env::var(TEST_POSTGRES_URL_ENV) {
        Ok(url) if !url.trim().is_empty() => Ok(TestPostgres { url, server: None }),
        _ => own_postgres(),
    }
}

/// A server of the test's own, even when a shared one is named (for tests
/// that stop it).
pub fn own_postgres() -> io::Result<TestPostgres> {
    let server = PostgresServer::start()?;
    Ok(TestPostgres {
        url: server.url(),
        server: Some(server),
    })
}

/// [`test_postgres`] for a test that cannot run without PostgreSQL: in CI
/// (`CI=true`) a missing server fails the test; elsewhere the test is
/// skipped (`None`) with the reason printed, so that a machine without
/// PostgreSQL still runs the rest of the suite.
pub fn test_postgres_or_skip(test: &str) -> Option<TestPostgres> {
    or_skip(test, test_postgres())
}

/// [`own_postgres`], failing in CI and skipping elsewhere like
/// [`test_postgres_or_skip`].
pub fn own_postgres_or_skip(test: &str) -> Option<TestPostgres> {
    or_skip(test, own_postgres())
}

fn or_skip(test: &str, found: io::Result<TestPostgres>) -> Option<TestPostgres> {
    match found {
        Ok(postgres) => Some(postgres),
        Err(e) if in_ci() => {
            panic!("{test}: no PostgreSQL for the tests: {e} (run scripts/provision.sh postgres)")
        }
        Err(e) => {
            eprintln!("skipping {test}: no PostgreSQL ({e}); run `scripts/provision.sh postgres`");
            None
        }
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}
