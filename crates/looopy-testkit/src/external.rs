//! Finding the external programs tests talk to (Python venvs, npm packages,
//! Chromium), which `scripts/provision.sh` installs under `.tools/`, and
//! running a Node.js browser script against that Chromium.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Finds a provisioned program: `$env_var` when set, `default` otherwise.
///
/// When it is missing the test fails, telling how to provision it, unless
/// `LOOOPY_SKIP_EXTERNAL=1`: then it prints a loud skip line and returns
/// `None`, and the caller returns (CI always provisions, so CI never skips).
pub fn require(env_var: &str, default: PathBuf, what: &str) -> Option<PathBuf> {
    let path = std::env::var_os(env_var)
        .map(PathBuf::from)
        .unwrap_or(default);
    if path.exists() {
        return Some(path);
    }
    if std::env::var("LOOOPY_SKIP_EXTERNAL").as_deref() == Ok("1") {
        eprintln!(
            "\n!!!!! SKIPPED: {what} not found at {} (LOOOPY_SKIP_EXTERNAL=1) !!!!!\n",
            path.display()
        );
        return None;
    }
    panic!(
        "{what} not found at {}: run `scripts/provision.sh` (or set {env_var}, or LOOOPY_SKIP_EXTERNAL=1 to skip)",
        path.display()
    );
}

/// The provisioned `@modelcontextprotocol/server-everything` binary
/// (`$LOOOPY_MCP_EVERYTHING` when set), found as [`require`] finds programs.
pub fn mcp_server_everything() -> Option<PathBuf> {
    require(
        "LOOOPY_MCP_EVERYTHING",
        repo_root().join(".tools/node/node_modules/.bin/mcp-server-everything"),
        "@modelcontextprotocol/server-everything",
    )
}

/// The provisioned MCP inspector, `@modelcontextprotocol/inspector`
/// (`$LOOOPY_MCP_INSPECTOR` when set; run with `--cli` for its CLI), found
/// as [`require`] finds programs.
pub fn mcp_inspector() -> Option<PathBuf> {
    require(
        "LOOOPY_MCP_INSPECTOR",
        repo_root().join(".tools/node/node_modules/.bin/mcp-inspector"),
        "@modelcontextprotocol/inspector",
    )
}

/// Whether process `pid` runs (Linux `/proc`): false once it exited, even
/// while it waits to be reaped (a zombie).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Whether process `pid` ends within `within`, looking every 50 ms.
pub async fn process_ends_within(pid: u32, within: std::time::Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while process_alive(pid) {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    true
}

/// `program` on `$PATH`, else `/usr/bin/<program>` (which may not exist:
/// [`require`] says so).
pub fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from(format!("/usr/bin/{program}")))
}

/// What a browser test needs: Chromium, npm `playwright-core` to drive it,
/// npm `axe-core` to check pages for accessibility, and Node.js to run the
/// script.
#[derive(Debug, Clone)]
pub struct Browser {
    /// The Chromium binary (`$LOOOPY_CHROMIUM`, else `/usr/bin/chromium`).
    pub chromium: PathBuf,
    /// The `playwright-core` package folder (`$LOOOPY_PLAYWRIGHT_CORE`).
    pub playwright_core: PathBuf,
    /// axe-core's script (`$LOOOPY_AXE_CORE`).
    pub axe_core: PathBuf,
    /// The `node` binary (`$LOOOPY_NODE`, else `node` on `$PATH`).
    pub node: PathBuf,
}

/// The provisioned [`Browser`], each part found as [`require`] finds programs.
pub fn browser() -> Option<Browser> {
    let chromium = require(
        "LOOOPY_CHROMIUM",
        PathBuf::from("/usr/bin/chromium"),
        "Chromium",
    )?;
    let playwright_core = require(
        "LOOOPY_PLAYWRIGHT_CORE",
        repo_root().join(".tools/node/node_modules/playwright-core"),
        "npm playwright-core",
    )?;
    let axe_core = require(
        "LOOOPY_AXE_CORE",
        repo_root().join(".tools/node/node_modules/axe-core/axe.min.js"),
        "npm axe-core",
    )?;
    let node = require("LOOOPY_NODE", which("node"), "Node.js")?;
    Some(Browser {
        chromium,
        playwright_core,
        axe_core,
        node,
    })
}

/// What a browser script run by [`Browser::run_script`] did.
#[derive(Debug, Clone)]
pub struct ScriptRun {
    /// Whether it exited with status 0.
    pub success: bool,
    /// What it printed on stdout (its checks, `ALL OK` at the end).
    pub stdout: String,
    /// What it printed on stderr (the failed check).
    pub stderr: String,
}

impl ScriptRun {
    /// Whether it exited 0 after printing `ALL OK`, the last word of the
    /// browser scripts once every check of theirs passed.
    pub fn all_ok(&self) -> bool {
        self.success && self.stdout.contains("ALL OK")
    }
}

impl Browser {
    /// Runs the Node.js `script` that drives this Chromium (told where as
    /// `PLAYWRIGHT_CORE` and `CHROMIUM`, with `AXE_CORE` and `BROWSER_KIT`,
    /// the scripts' shared helpers of `js/browser.cjs`, and `env` besides); killed after
    /// `limit`, which is then an error of kind `TimedOut`. Its output is
    /// echoed to stderr, for the test's log.
    pub async fn run_script(
        &self,
        script: &Path,
        env: &[(&str, &dyn AsRef<OsStr>)],
        limit: Duration,
    ) -> std::io::Result<ScriptRun> {
        let mut command = tokio::process::Command::new(&self.node);
        command
            .arg(script)
            .env("PLAYWRIGHT_CORE", &self.playwright_core)
            .env("CHROMIUM", &self.chromium)
            .env("AXE_CORE", &self.axe_core)
            .env(
                "BROWSER_KIT",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("js/browser.cjs"),
            )
            .kill_on_drop(true);
        for (name, value) in env {
            command.env(name, value);
        }
        let out = tokio::time::timeout(limit, command.output())
            .await
            .map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("{} ran past {limit:?}", script.display()),
                )
            })??;
        let run = ScriptRun {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        eprintln!("{}\n{}", run.stdout, run.stderr);
        Ok(run)
    }
}
