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
mod scripts;
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
pub use task_records::RedisTaskRecordStore;
pub use turns::RedisTurnStore;

/// Every Redis store on one [`RedisBackend`] (one pool), each behind an
/// [`Arc`] so that it coerces to the `Arc<dyn Trait>` an Agent takes while
/// the bundle keeps the concrete type.
#[derive(Debug, Clone)]
pub struct RedisStores {
    /// The shared pool and settings.
    pub backend: RedisBackend,
    /// Loop checkpoints.
    pub checkpoints: Arc<RedisCheckpointStore>,
    /// Conversation histories.
    pub messages: Arc<RedisMessageStore>,
    /// Artifacts.
    pub artifacts: Arc<RedisArtifactStore>,
    /// Agent lifecycle metadata.
    pub agents: Arc<RedisAgentStateStore>,
    /// Event logs.
    pub events: Arc<RedisEventLog>,
    /// Turn leases.
    pub locks: Arc<RedisTurnLock>,
    /// A2A task records.
    pub task_records: Arc<RedisTaskRecordStore>,
    /// An Agent turn's start and end over the stores above (give it to
    /// `AgentBuilder::turn_store` with them).
    pub turns: Arc<RedisTurnStore>,
}

impl RedisStores {
    /// Every store on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        let tasks = Arc::new(RedisCheckpointStore::new(backend.clone()));
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
                tasks.clone(),
            )
            .with_artifacts(artifacts.clone()),
        );
        RedisStores {
            checkpoints: tasks,
            messages,
            artifacts,
            agents,
            events: Arc::new(RedisEventLog::new(backend.clone())),
            locks,
            task_records: Arc::new(RedisTaskRecordStore::new(backend.clone())),
            turns,
            backend,
        }
    }

    /// Connects (see [`RedisBackend::connect`]) and makes every store.
    pub async fn connect(config: RedisConfig) -> Result<Self, StoreError> {
        Ok(Self::new(RedisBackend::connect(config).await?))
    }
}

/// Every Redis store on `backend` (one pool), as the one bundle an Agent and
/// an A2A server take.
pub fn stores(backend: RedisBackend) -> Stores {
    RedisStores::new(backend).into()
}

/// Connects (see [`RedisBackend::connect`]: a wrong URL or an unreachable
/// server fails here with [`StoreError::Unavailable`], an invalid
/// configuration with [`StoreError::Backend`]) and makes every store.
pub async fn connect(config: RedisConfig) -> Result<Stores, StoreError> {
    Ok(stores(RedisBackend::connect(config).await?))
}

impl From<RedisStores> for Stores {
    fn from(r: RedisStores) -> Self {
        Stores {
            checkpoints: r.checkpoints,
            messages: r.messages,
            artifacts: r.artifacts,
            agents: r.agents,
            events: r.events,
            locks: r.locks,
            task_records: r.task_records,
            push_configs: Arc::new(RedisPushConfigStore::new(r.backend)),
            turns: Some(r.turns),
        }
    }
}
