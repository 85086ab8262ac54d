#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod agents;
mod artifacts;
mod cache;
mod events;
mod locks;
mod messages;
mod push_configs;
mod retention;
mod task_records;
mod tasks;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use agents::MemoryAgentStateStore;
pub use artifacts::MemoryArtifactStore;
pub use cache::MemoryCacheStore;
pub use events::MemoryEventLog;
pub use locks::MemoryTurnLock;
pub use messages::MemoryMessageStore;
pub use push_configs::MemoryPushConfigStore;
pub use retention::MemoryRetention;
pub use task_records::MemoryTaskStore;
pub use tasks::MemoryTaskStateStore;

/// Every in-memory store, each behind an [`Arc`] so that it can be handed to
/// an Agent as `Arc<dyn Trait>` (`stores.messages.clone()` coerces) while the
/// bundle keeps a handle for inspection.
///
/// Clones share the same data.
#[derive(Debug, Clone, Default)]
pub struct MemoryStores {
    /// Loop checkpoints.
    pub tasks: Arc<MemoryTaskStateStore>,
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
            tasks: Arc::new(MemoryTaskStateStore::with_retention(retention)),
            messages: Arc::new(MemoryMessageStore::with_retention(retention)),
            artifacts: Arc::new(MemoryArtifactStore::with_retention(retention)),
            agents: Arc::new(MemoryAgentStateStore::with_retention(retention)),
            events: Arc::new(MemoryEventLog::with_retention(retention)),
            locks: Arc::new(MemoryTurnLock::default()),
        }
    }
}

/// Locks a mutex, carrying on after a panic in another holder: every critical
/// section in this crate leaves its data consistent before anything can panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
