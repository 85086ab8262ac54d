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
mod records;
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
pub use records::SqliteRecordStore;
pub use task_records::SqliteTaskRecordStore;
pub use turns::SqliteTurnStore;

/// Every SQLite store on `backend` (one database file), as the one bundle
/// an Agent and an A2A server take, with the [`SqliteTurnStore`] that
/// starts and ends a turn in one write transaction each
/// (`Stores::turns`). Keep a clone of `backend` for what only SQLite has
/// (the prune, the schema version).
pub fn stores(backend: SqliteBackend) -> Stores {
    // The turn store works over the bundle's own stores: an Agent then
    // builds its checkpoints on the stored history and hands the turn's
    // artifacts to the turn's end (it checks that they are the same).
    let own = turns::TurnStores {
        messages: Arc::new(SqliteMessageStore::new(backend.clone())),
        states: Arc::new(SqliteAgentStateStore::new(backend.clone())),
        lock: Arc::new(SqliteTurnLock::new(backend.clone())),
        checkpoints: Arc::new(SqliteCheckpointStore::new(backend.clone())),
        artifacts: Arc::new(SqliteArtifactStore::new(backend.clone())),
    };
    let (checkpoints, messages, artifacts, agents, locks) = (
        own.checkpoints.clone(),
        own.messages.clone(),
        own.artifacts.clone(),
        own.states.clone(),
        own.lock.clone(),
    );
    let turns = SqliteTurnStore::over(backend.clone(), own);
    Stores {
        checkpoints,
        messages,
        artifacts,
        agents,
        events: Arc::new(SqliteEventLog::new(backend.clone())),
        locks,
        task_records: Arc::new(SqliteTaskRecordStore::new(backend.clone())),
        push_configs: Arc::new(SqlitePushConfigStore::new(backend.clone())),
        records: Some(Arc::new(SqliteRecordStore::new(backend))),
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
