//! [`Stores`]: every store an Agent and an A2A server use, as one bundle.

use std::sync::Arc;

use super::{
    AgentStateStore, ArtifactStore, CheckpointStore, EventLog, MessageStore, PushConfigStore,
    RecordStore, TaskRecordStore, TurnLock, TurnStore,
};

/// Every store, as the trait objects an Agent and a server take: one type
/// whatever the backend, and the only bundle type. Each backend crate
/// builds one (`looopy_stores_memory::stores` and `stores_with_retention`,
/// `looopy_stores_redis::connect` and `stores`), and the `looopy-stores`
/// crate builds one from configuration.
///
/// The fields are public, so a test that inspects one store beyond its
/// trait builds that store itself and replaces the field
/// (`Stores { locks: my_lock.clone(), ..backend_stores }`).
///
/// Clones share the same stores.
#[derive(Clone)]
pub struct Stores {
    /// Loop checkpoints.
    pub checkpoints: Arc<dyn CheckpointStore>,
    /// Conversation histories.
    pub messages: Arc<dyn MessageStore>,
    /// Artifacts.
    pub artifacts: Arc<dyn ArtifactStore>,
    /// Agent lifecycle metadata.
    pub agents: Arc<dyn AgentStateStore>,
    /// Event logs.
    pub events: Arc<dyn EventLog>,
    /// Turn leases.
    pub locks: Arc<dyn TurnLock>,
    /// A2A task records.
    pub task_records: Arc<dyn TaskRecordStore>,
    /// A2A push notification configs.
    pub push_configs: Arc<dyn PushConfigStore>,
    /// Execution records of turns, for a backend that keeps them (memory,
    /// Redis); `None`: turns are not recorded.
    pub records: Option<Arc<dyn RecordStore>>,
    /// A turn's start and end in one operation each, for a backend that
    /// has it (Redis, SQLite, PostgreSQL); `None`: an Agent calls the stores above one after
    /// the other.
    pub turns: Option<Arc<dyn TurnStore>>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}
