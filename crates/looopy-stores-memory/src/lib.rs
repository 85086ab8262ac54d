#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod agents;
mod artifacts;
mod cache;
mod checkpoints;
mod events;
mod locks;
mod messages;
mod push_configs;
mod retention;
mod task_records;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use looopy_core::store::Stores;

pub use agents::MemoryAgentStateStore;
pub use artifacts::MemoryArtifactStore;
pub use cache::MemoryCacheStore;
pub use checkpoints::MemoryCheckpointStore;
pub use events::MemoryEventLog;
pub use locks::MemoryTurnLock;
pub use messages::MemoryMessageStore;
pub use push_configs::MemoryPushConfigStore;
pub use retention::MemoryRetention;
pub use task_records::MemoryTaskRecordStore;

/// Every in-memory store, each behind an [`Arc`] so that it can be handed to
/// an Agent as `Arc<dyn Trait>` (`stores.messages.clone()` coerces) while the
/// bundle keeps a handle for inspection.
///
/// Clones share the same data.
#[derive(Debug, Clone, Default)]
pub struct MemoryStores {
    /// Loop checkpoints.
    pub checkpoints: Arc<MemoryCheckpointStore>,
    /// Conversation histories.
    pub messages: Arc<MemoryMessageStore>,
    /// Artifacts.
    pub artifacts: Arc<MemoryArtifactStore>,
    /// Agent lifecycle metadata.
    pub agents: Arc<MemoryAgentStateStore>,
    /// Event logs.
    pub events: Arc<MemoryEventLog>,
    /// Turn leases.
    pub locks: Arc<MemoryTurnLock>,
}

impl MemoryStores {
    /// A fresh set of empty stores that keep everything until it is deleted.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh set of empty stores that expire and cap what they hold as
    /// `retention` says (the turn leases are not capped: each ends with its
    /// turn or runs out).
    pub fn with_retention(retention: &MemoryRetention) -> Self {
        MemoryStores {
            checkpoints: Arc::new(MemoryCheckpointStore::with_retention(retention)),
            messages: Arc::new(MemoryMessageStore::with_retention(retention)),
            artifacts: Arc::new(MemoryArtifactStore::with_retention(retention)),
            agents: Arc::new(MemoryAgentStateStore::with_retention(retention)),
            events: Arc::new(MemoryEventLog::with_retention(retention)),
            locks: Arc::new(MemoryTurnLock::default()),
        }
    }
}

/// Every store in this process's memory, as the one bundle an Agent and an
/// A2A server take, expiring and capping what it holds as `retention` says
/// (`MemoryRetention::default()` keeps everything but checkpoints, which
/// expire a day after their last save).
///
/// ```
/// use looopy_core::Message;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), looopy_core::StoreError> {
/// let stores = looopy_stores_memory::stores(&Default::default());
/// stores.messages.append("ctx-1", &[Message::user("hi")]).await?;
/// assert_eq!(stores.messages.count("ctx-1").await?, 1);
/// # Ok(())
/// # }
/// ```
pub fn stores(retention: &MemoryRetention) -> Stores {
    let m = MemoryStores::with_retention(retention);
    Stores {
        checkpoints: m.checkpoints,
        messages: m.messages,
        artifacts: m.artifacts,
        agents: m.agents,
        events: m.events,
        locks: m.locks,
        task_records: Arc::new(MemoryTaskRecordStore::with_retention(retention)),
        push_configs: Arc::new(MemoryPushConfigStore::new()),
        turns: None,
    }
}

/// Locks a mutex, carrying on after a panic in another holder: every critical
/// section in this crate leaves its data consistent before anything can panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
