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
mod migrate;
mod prune;
mod push_configs;
mod records;
mod task_records;
mod turns;

use std::sync::Arc;

use looopy_core::StoreError;
use looopy_core::store::Stores;

pub use agents::PostgresAgentStateStore;
pub use artifacts::PostgresArtifactStore;
pub use backend::PostgresBackend;
pub use cache::PostgresCacheStore;
pub use checkpoints::PostgresCheckpointStore;
pub use config::PostgresConfig;
pub use error::PostgresError;
pub use events::PostgresEventLog;
pub use locks::PostgresTurnLock;
pub use messages::PostgresMessageStore;
pub use migrate::SCHEMA_VERSION;
pub use prune::PruneReport;
pub use push_configs::PostgresPushConfigStore;
pub use records::PostgresRecordStore;
pub use task_records::PostgresTaskRecordStore;
pub use turns::PostgresTurnStore;

/// Every PostgreSQL store on `backend` (one pool, one schema and the
/// retention of its [`PostgresConfig`]), as the one bundle an Agent and an
/// A2A server take, with the [`PostgresTurnStore`] that starts and ends a
/// turn in one transaction each (`Stores::turns`).
pub fn stores(backend: PostgresBackend) -> Stores {
    let checkpoints = Arc::new(PostgresCheckpointStore::new(backend.clone()));
    let messages = Arc::new(PostgresMessageStore::new(backend.clone()));
    let agents = Arc::new(PostgresAgentStateStore::new(backend.clone()));
    let locks = Arc::new(PostgresTurnLock::new(backend.clone()));
    let artifacts = Arc::new(PostgresArtifactStore::new(backend.clone()));
    let turns = Arc::new(
        PostgresTurnStore::new(
            backend.clone(),
            messages.clone(),
            agents.clone(),
            locks.clone(),
            checkpoints.clone(),
        )
        .with_artifacts(artifacts.clone()),
    );
    Stores {
        checkpoints,
        messages,
        artifacts,
        agents,
        events: Arc::new(PostgresEventLog::new(backend.clone())),
        locks,
        task_records: Arc::new(PostgresTaskRecordStore::new(backend.clone())),
        push_configs: Arc::new(PostgresPushConfigStore::new(backend.clone())),
        records: Some(Arc::new(PostgresRecordStore::new(backend))),
        turns: Some(turns),
    }
}

/// Connects, migrates (see [`PostgresBackend::connect`]) and makes every
/// store. An unreachable server fails with [`StoreError::Unavailable`], a
/// bad configuration or a schema written by a newer Looopy with
/// [`StoreError::Backend`], each with a message saying what to do.
pub async fn connect(config: PostgresConfig) -> Result<Stores, StoreError> {
    Ok(stores(PostgresBackend::connect(config).await?))
}
