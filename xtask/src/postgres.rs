//! A throw-away PostgreSQL server for the test run: a fresh cluster in a
//! temporary directory (`initdb`), served on a free loopback port
//! (`pg_ctl`), as the `postgres` user when the run is root (PostgreSQL
//! refuses to run as root), and stopped and removed when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// A PostgreSQL cluster on a free loopback port; stopped when dropped.
pub(crate) struct PostgresServer {
    bin: PathBuf,
    dir: PathBuf,
    as_postgres: bool,
    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub(crate) url: String,
}

impl PostgresServer {
    /// Makes a cluster, starts it and waits until it accepts connections.
    pub(crate) fn start() -> Result<Self> {
        let bin = bin_dir()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir = std::env::temp_dir().join(format!("looopy-postgres-{port}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let server = PostgresServer {
            bin,
            dir,
            as_postgres,
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        };
        if as_postgres {
            let ok = Command::new("chown")
                .arg("postgres:postgres")
                .arg(&server.dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                bail!(
                    "could not hand {} to the postgres user",
                    server.dir.display()
                );
            }
        }
        let data = server.dir.join("data");
        let initdb = server
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdout(Stdio::null())
            .status()
            .context("could not run initdb (run scripts/provision.sh postgres)")?;
        if !initdb.success() {
            bail!("initdb failed ({initdb})");
        }
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -k {} -c fsync=off \
             -c full_page_writes=off -c max_connections=400",
            server.dir.display()
        );
        let started = server
            .command("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(server.dir.join("server.log"))
            .args(["-o", &options, "-w", "-t", "30", "start"])
            .stdout(Stdio::null())
            .status()
            .context("could not run pg_ctl")?;
        if !started.success() {
            bail!(
                "PostgreSQL did not start ({started}); see {}",
                server.dir.join("server.log").display()
            );
        }
        eprintln!("[xtask] postgres up at {}", server.url);
        Ok(server)
    }

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
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
        eprintln!("[xtask] postgres at {} stopped", self.url);
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` (or `LOOOPY_POSTGRES_BIN`).
fn bin_dir() -> Result<PathBuf> {
    if let Ok(dir) = std::env::var("LOOOPY_POSTGRES_BIN")
        && !dir.trim().is_empty()
    {
        return Ok(PathBuf::from(dir));
    }
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .with_context(|| {
            format!(
                "no PostgreSQL under {} (run scripts/provision.sh postgres)",
                root.display()
            )
        })?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    match versions.pop() {
        Some((_, bin)) => Ok(bin),
        None => {
            bail!("no initdb under /usr/lib/postgresql/*/bin (run scripts/provision.sh postgres)")
        }
    }
}
