//! Running commands from the workspace root.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The workspace root (the parent of this crate).
pub(crate) fn root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// A command run from the workspace root.
pub(crate) fn cmd(program: &str, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args).current_dir(root());
    c
}

/// Runs a command, failing with its name when it fails.
pub(crate) fn run(mut c: Command) -> Result<()> {
    let shown = format!("{c:?}");
    eprintln!("[xtask] $ {shown}");
    let status = c
        .status()
        .with_context(|| format!("could not start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

/// Whether `program` is on the PATH.
pub(crate) fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}
