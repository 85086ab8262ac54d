#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod agents;
mod artifacts;
mod backend;
mod cache;
mod checkpoints;
mod config;
mod error;
mod events;
mod locks;
mod messages;
mod push_configs;
mod task_records;
mod turns;

use std::sync::Arc;

use looopy_core::StoreError;
use looopy_core::store::Stores;

pub use agents::SqliteAgentStateStore;
pub use artifacts::SqliteArtifactStore;
pub use backend::{Pruned, SCHEMA_VERSION, SqliteBackend};
pub use cache::SqliteCacheStore;
pub use checkpoints::SqliteCheckpointStore;
pub use config::{Durability, SqliteConfig};
pub use error::OpenError;
pub use events::SqliteEventLog;
pub use locks::SqliteTurnLock;
pub use messages::SqliteMessageStore;
pub use push_configs::SqlitePushConfigStore;
pub use task_records::SqliteTaskRecordStore;
pub use turns::SqliteTurnStore;

/// Every SQLite store on `backend` (one database file), as the one bundle
/// an Agent and an A2A server take, with the [`SqliteTurnStore`] that
/// starts and ends a turn in one write transaction each
/// (`Stores::turns`). Keep a clone of `backend` for what only SQLite has
/// (the prune, the schema version).
pub fn stores(backend: SqliteBackend) -> Stores {
    let turns = SqliteTurnStore::new(backend.clone());
    Stores {
        checkpoints: Arc::new(SqliteCheckpointStore::new(backend.clone())),
        messages: Arc::new(SqliteMessageStore::new(backend.clone())),
        artifacts: Arc::new(SqliteArtifactStore::new(backend.clone())),
        agents: Arc::new(SqliteAgentStateStore::new(backend.clone())),
        events: Arc::new(SqliteEventLog::new(backend.clone())),
        locks: Arc::new(SqliteTurnLock::new(backend.clone())),
        task_records: Arc::new(SqliteTaskRecordStore::new(backend.clone())),
        push_configs: Arc::new(SqlitePushConfigStore::new(backend)),
        turns: Some(Arc::new(turns)),
    }
}

/// Opens the database of `config` (see [`SqliteBackend::open`]: its
/// directory and file are created when missing, the schema is brought up
/// to date, a newer one is refused) and makes every store. Errors are
/// [`StoreError::Backend`] (or `Unavailable` when the file is locked) with
/// the [`OpenError`]'s message.
pub async fn connect(config: SqliteConfig) -> Result<Stores, StoreError> {
    Ok(stores(SqliteBackend::open(config).await?))
}
