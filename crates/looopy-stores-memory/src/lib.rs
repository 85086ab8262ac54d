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
mod records;
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
pub use records::MemoryRecordStore;
pub use retention::MemoryRetention;
pub use task_records::MemoryTaskRecordStore;

/// Every store in this process's memory, as the one bundle an Agent and an
/// A2A server take, keeping everything until it is deleted (as each store's
/// `new` does): for tests, examples and short-lived processes. A
/// long-running process takes [`stores_with_retention`], so that what it
/// holds stays bounded.
///
/// A test that inspects a store beyond its trait (a turn lease's holder,
/// how many conversations are kept) builds that store itself and puts it in
/// the bundle:
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use looopy_core::store::{Acquire, Stores};
/// use looopy_stores_memory::MemoryTurnLock;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), looopy_core::StoreError> {
/// let locks = Arc::new(MemoryTurnLock::new());
/// let stores = Stores {
///     locks: locks.clone(),
///     ..looopy_stores_memory::stores()
/// };
/// let ttl = Duration::from_secs(30);
/// assert_eq!(stores.locks.try_acquire("ctx-1", "me", None, ttl).await?, Acquire::Acquired);
/// assert_eq!(locks.holder("ctx-1").as_deref(), Some("me"));
/// # Ok(())
/// # }
/// ```
pub fn stores() -> Stores {
    Stores {
        checkpoints: Arc::new(MemoryCheckpointStore::new()),
        messages: Arc::new(MemoryMessageStore::new()),
        artifacts: Arc::new(MemoryArtifactStore::new()),
        agents: Arc::new(MemoryAgentStateStore::new()),
        events: Arc::new(MemoryEventLog::new()),
        locks: Arc::new(MemoryTurnLock::new()),
        task_records: Arc::new(MemoryTaskRecordStore::new()),
        push_configs: Arc::new(MemoryPushConfigStore::new()),
        records: Some(Arc::new(MemoryRecordStore::new())),
        turns: None,
    }
}

/// Every store in this process's memory, as the one bundle an Agent and an
/// A2A server take, expiring and capping what it holds as `retention` says
/// (`MemoryRetention::default()` caps each store at 10,000 entries and lets
/// checkpoints expire a day after their last save). The turn leases are
/// not capped (each ends with its turn or runs out), nor are the push
/// configs ([`MemoryPushConfigStore`]).
///
/// ```
/// use looopy_core::Message;
/// use looopy_stores_memory::MemoryRetention;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), looopy_core::StoreError> {
/// let stores = looopy_stores_memory::stores_with_retention(&MemoryRetention::default());
/// stores.messages.append("ctx-1", &[Message::user("hi")]).await?;
/// assert_eq!(stores.messages.count("ctx-1").await?, 1);
/// # Ok(())
/// # }
/// ```
pub fn stores_with_retention(retention: &MemoryRetention) -> Stores {
    Stores {
        checkpoints: Arc::new(MemoryCheckpointStore::with_retention(retention)),
        messages: Arc::new(MemoryMessageStore::with_retention(retention)),
        artifacts: Arc::new(MemoryArtifactStore::with_retention(retention)),
        agents: Arc::new(MemoryAgentStateStore::with_retention(retention)),
        events: Arc::new(MemoryEventLog::with_retention(retention)),
        locks: Arc::new(MemoryTurnLock::new()),
        task_records: Arc::new(MemoryTaskRecordStore::with_retention(retention)),
        push_configs: Arc::new(MemoryPushConfigStore::new()),
        records: Some(Arc::new(MemoryRecordStore::new())),
        turns: None,
    }
}

/// Locks a mutex, carrying on after a panic in another holder: every critical
/// section in this crate leaves its data consistent before anything can panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
