//! Finding the external programs tests talk to (Python venvs, npm packages,
//! Chromium), which `scripts/provision.sh` installs under `.tools/`.

use std::path::{Path, PathBuf};

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
