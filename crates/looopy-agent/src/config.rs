//! Settings of an Agent that are not the loop's.

use std::time::Duration;

use crate::compaction::CompactionConfig;
use crate::window::WindowConfig;

/// Default time-to-live of the turn lease; it is renewed every third of it
/// while a turn runs.
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(30);

/// Compaction records kept in the agent state's metadata (the newest ones).
pub const MAX_COMPACTION_RECORDS: usize = 20;

/// Agent-state metadata keys written by the Agent.
pub mod keys {
    /// Records of the latest compactions (see
    /// [`CompactionReport::to_json`](crate::CompactionReport::to_json)), oldest first.
    pub const COMPACTIONS: &str = "compactions";
    /// Number of compactions ever made.
    pub const COMPACTION_COUNT: &str = "compactionCount";
}

/// What the builder collected beside the stores and the loop.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) auto_save: bool,
    pub(crate) lock_ttl: Duration,
    pub(crate) window: WindowConfig,
    /// The window is a layer around the loop's model (`WindowedLlm`), which
    /// applies it to every request: the turn then starts on the whole
    /// history, so that the window is applied once, not twice.
    pub(crate) window_in_model: bool,
    pub(crate) compaction: CompactionConfig,
    pub(crate) owner: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            auto_save: true,
            lock_ttl: DEFAULT_LOCK_TTL,
            window: WindowConfig::default(),
            window_in_model: false,
            compaction: CompactionConfig::default(),
            owner: None,
        }
    }
}
