//! Settings of an Agent that are not the loop's.

use std::time::Duration;

use crate::compaction::CompactionConfig;
use crate::window::WindowConfig;

/// Default time-to-live of the turn lease; it is renewed every third of it
/// while a turn runs.
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(30);

/// Messages the default sliding window sends (the newest ones; a tool
/// result is never separated from the call that asked for it).
pub const DEFAULT_WINDOW_MESSAGES: usize = 50;

/// Tool results longer than this many characters are stored as artifacts by
/// the default tool-output cache; the model pages through them with
/// `read_tool_output`.
pub const DEFAULT_TOOL_OUTPUT_MAX_CHARS: usize = 20_000;

/// Characters of a cached tool result the model sees at once.
pub const DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS: usize = 2_000;

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
    /// `(max_chars, preview_chars)` of the tool-output cache the Agent gives
    /// the loop it builds; `None`: no cache.
    pub(crate) tool_output: Option<(usize, usize)>,
    /// Whether the loop the Agent builds offers the artifact tools.
    pub(crate) artifact_tools: bool,
    /// Typed state for tools, on every turn's context (under the turn's own).
    pub(crate) deps: looopy_core::Deps,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            auto_save: true,
            lock_ttl: DEFAULT_LOCK_TTL,
            window: WindowConfig::max_messages(DEFAULT_WINDOW_MESSAGES),
            window_in_model: false,
            compaction: CompactionConfig::default(),
            owner: None,
            tool_output: Some((
                DEFAULT_TOOL_OUTPUT_MAX_CHARS,
                DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS,
            )),
            artifact_tools: false,
            deps: looopy_core::Deps::default(),
        }
    }
}
