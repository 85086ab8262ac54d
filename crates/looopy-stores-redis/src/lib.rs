#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod agents;
mod artifacts;
mod backend;
mod cache;
mod checkpoints;
mod config;
mod connection;
mod error;
mod events;
mod index;
mod keys;
mod locks;
mod messages;
mod push_configs;
mod records;
mod scripts;
mod suspects;
mod task_records;
mod turns;

use std::sync::Arc;

use looopy_core::StoreError;
use looopy_core::store::Stores;

pub use agents::RedisAgentStateStore;
pub use artifacts::RedisArtifactStore;
pub use backend::RedisBackend;
pub use cache::RedisCacheStore;
pub use checkpoints::RedisCheckpointStore;
pub use config::RedisConfig;
pub use error::ConfigError;
pub use events::RedisEventLog;
pub use keys::KeyLayout;
pub use locks::RedisTurnLock;
pub use messages::RedisMessageStore;
pub use push_configs::RedisPushConfigStore;
pub use records::RedisRecordStore;
pub use task_records::RedisTaskRecordStore;
pub use turns::RedisTurnStore;

/// Every Redis store on `backend` (one pool, one key prefix and the TTLs of
/// its [`RedisConfig`]), as the one bundle an Agent and an A2A server take,
/// with the [`RedisTurnStore`] that starts and ends a turn in one round trip
/// each (`Stores::turns`). Keep a clone of `backend` for what only Redis
/// has (its key layout, whether it is a cluster).
pub fn stores(backend: RedisBackend) -> Stores {
    let checkpoints = Arc::new(RedisCheckpointStore::new(backend.clone()));
    let messages = Arc::new(RedisMessageStore::new(backend.clone()));
    let agents = Arc::new(RedisAgentStateStore::new(backend.clone()));
    let locks = Arc::new(RedisTurnLock::new(backend.clone()));
    let artifacts = Arc::new(RedisArtifactStore::new(backend.clone()));
    let turns = Arc::new(
        RedisTurnStore::new(
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
        events: Arc::new(RedisEventLog::new(backend.clone())),
        locks,
        task_records: Arc::new(RedisTaskRecordStore::new(backend.clone())),
        push_configs: Arc::new(RedisPushConfigStore::new(backend.clone())),
        records: Some(Arc::new(RedisRecordStore::new(backend))),
        turns: Some(turns),
    }
}

/// Connects (see [`RedisBackend::connect`]: a wrong URL or an unreachable
/// server fails here with [`StoreError::Unavailable`], an invalid
/// configuration with [`StoreError::Backend`]) and makes every store.
pub async fn connect(config: RedisConfig) -> Result<Stores, StoreError> {
    Ok(stores(RedisBackend::connect(config).await?))
}
