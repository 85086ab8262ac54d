//! [`SqliteConfig`]: which database file the stores use and how.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the database file is flushed to disk (SQLite's `synchronous` in
/// WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Every commit survives the process being killed; the last commits
    /// before a power loss or an OS crash may be lost (`synchronous =
    /// NORMAL`). The default.
    #[default]
    Normal,
    /// Every commit is flushed to disk before it returns, so it also
    /// survives a power loss (`synchronous = FULL`), at one `fsync` per
    /// commit.
    Full,
}

/// Settings of the SQLite stores. Every field has a default, so a TOML
/// table needs only what differs:
///
/// ```toml
/// path = ".looopy/looopy.db"   # created with its directory when missing
/// busy_timeout_ms = 5000        # how long a write waits for another process's
/// task_ttl_secs = 86400         # checkpoints, a day after their last save (0: forever)
/// ttl_secs = 0                  # ended conversations and their tasks (0: forever)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqliteConfig {
    /// The database file. Its directory is created when missing.
    pub path: PathBuf,
    /// Connections kept open (readers run side by side; writes take turns).
    pub pool_size: u32,
    /// How long a write waits for the write lock that another process
    /// holds before it fails with `StoreError::Unavailable`, in
    /// milliseconds.
    pub busy_timeout_ms: u64,
    /// How commits reach the disk.
    pub durability: Durability,
    /// Lifetime of a checkpoint after its last save, in seconds; 0: none.
    pub task_ttl_secs: u64,
    /// Lifetime of an ended conversation (its messages, artifacts and
    /// agent state, counted from its last write, and never while a turn
    /// holds its lease) and of a task's events, record, cancel flag and
    /// push configs (from their last write), in seconds; 0: none.
    pub ttl_secs: u64,
    /// How often the prune of expired rows runs, in seconds; 0: never (a
    /// caller runs [`SqliteBackend::prune`](crate::SqliteBackend::prune)).
    pub prune_interval_secs: u64,
    /// Most rows one prune statement deletes, so that a prune never holds
    /// the write lock for long.
    pub prune_batch: u32,
    /// How long an event follower waits for a wake-up from this process
    /// before it looks at the database again (for appends by other
    /// processes), in milliseconds.
    pub follow_poll_ms: u64,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig {
            path: PathBuf::from(".looopy/looopy.db"),
            pool_size: 4,
            busy_timeout_ms: 5_000,
            durability: Durability::Normal,
            task_ttl_secs: 24 * 60 * 60,
            ttl_secs: 0,
            prune_interval_secs: 60,
            prune_batch: 500,
            follow_poll_ms: 250,
        }
    }
}

fn secs(n: u64) -> Option<Duration> {
    (n > 0).then(|| Duration::from_secs(n))
}

impl SqliteConfig {
    /// The defaults on another file.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SqliteConfig {
            path: path.into(),
            ..Self::default()
        }
    }

    /// Sets the checkpoint lifetime (`None`: forever). Whole seconds; a
    /// shorter non-zero duration counts as one second.
    #[must_use]
    pub fn with_task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.task_ttl_secs = ttl.map_or(0, |d| d.as_secs().max(1));
        self
    }

    /// Sets the lifetime of ended conversations and tasks (`None`:
    /// forever). Whole seconds; a shorter non-zero duration counts as one
    /// second.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl_secs = ttl.map_or(0, |d| d.as_secs().max(1));
        self
    }

    /// Sets how often the prune runs (`None`: never on its own).
    #[must_use]
    pub fn with_prune_interval(mut self, every: Option<Duration>) -> Self {
        self.prune_interval_secs = every.map_or(0, |d| d.as_secs().max(1));
        self
    }

    /// Checkpoint lifetime.
    pub fn task_ttl(&self) -> Option<Duration> {
        secs(self.task_ttl_secs)
    }

    /// Lifetime of ended conversations and tasks.
    pub fn ttl(&self) -> Option<Duration> {
        secs(self.ttl_secs)
    }

    /// How often the prune runs.
    pub fn prune_interval(&self) -> Option<Duration> {
        secs(self.prune_interval_secs)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_table_needs_only_what_differs() {
        let config: SqliteConfig = toml::from_str(
            "path = \"/var/lib/looopy/db.sqlite\"\nttl_secs = 3600\ndurability = \"full\"",
        )
        .unwrap();
        assert_eq!(config.path, PathBuf::from("/var/lib/looopy/db.sqlite"));
        assert_eq!(config.ttl(), Some(Duration::from_secs(3600)));
        assert_eq!(config.task_ttl(), Some(Duration::from_secs(86_400)));
        assert_eq!(config.durability, Durability::Full);
        assert!(toml::from_str::<SqliteConfig>("url = \"x\"").is_err());
    }
}
