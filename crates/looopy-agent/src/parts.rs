//! [`Parts`]: everything of an Agent but its conversation and its owner,
//! built once by the builder and shared by every Agent of a template.

use std::sync::Arc;

use looopy_core::LlmProvider;
use looopy_core::record::RecordPolicy;
use looopy_core::store::RecordStore;
use looopy_core::store::{AgentStateStore, ArtifactStore, MessageStore, TurnLock, TurnStore};
use looopy_loop::AgentLoop;

use crate::config::Settings;

/// What the builder hands over: everything of an Agent but its
/// conversation and its owner (a template's, shared by its Agents).
pub(crate) struct Parts {
    pub(crate) agent_loop: AgentLoop,
    pub(crate) summarizer: Arc<dyn LlmProvider>,
    /// A turn's start and end (over the stores below).
    pub(crate) turns: Arc<dyn TurnStore>,
    pub(crate) messages: Arc<dyn MessageStore>,
    pub(crate) artifacts: Arc<dyn ArtifactStore>,
    pub(crate) states: Option<Arc<dyn AgentStateStore>>,
    pub(crate) turn_lock: Option<Arc<dyn TurnLock>>,
    pub(crate) settings: Settings,
    /// Where each turn's execution record goes; `None`: not recorded.
    pub(crate) records: Option<Arc<dyn RecordStore>>,
    /// What records keep of payloads.
    pub(crate) record_policy: RecordPolicy,
}
