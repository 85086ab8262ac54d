//! [`StoreConfig`] and [`Stores`]: the backend picked by configuration.
//!
//! The factory lives here, with the memory backend behind the `memory`
//! feature (on by default), because it needs both backends and
//! `looopy-stores-memory` must not depend on Redis; a binary that wants only
//! Redis turns default features off.

use std::sync::Arc;

use looopy_core::StoreError;
use looopy_core::store::{
    AgentStateStore, ArtifactStore, EventLog, MessageStore, PushConfigStore, TaskStateStore,
    TaskStore, TurnLock,
};
use serde::{Deserialize, Serialize};

use crate::{RedisConfig, RedisStores};

/// Which backend holds the stores, as a configuration file names it:
///
/// ```toml
/// [store]
/// backend = "redis"            # or "memory"
/// url = "redis://127.0.0.1:6379"
/// key_prefix = "myapp"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "backend", rename_all = "lowercase")]
#[non_exhaustive]
pub enum StoreConfig {
    /// Everything in this process's memory (tests, single-process servers),
    /// kept as long as the retention says (`task_ttl_secs`, `ttl_secs`,
    /// `max_entries`: [`looopy_stores_memory::MemoryRetention`]).
    #[cfg(feature = "memory")]
    Memory(looopy_stores_memory::MemoryRetention),
    /// Everything in Redis.
    Redis(RedisConfig),
}

/// Every store, as the trait objects an Agent and a server take.
#[derive(Clone)]
pub struct Stores {
    /// Loop checkpoints.
    pub tasks: Arc<dyn TaskStateStore>,
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
    pub task_records: Arc<dyn TaskStore>,
    /// A2A push notification configs.
    pub push_configs: Arc<dyn PushConfigStore>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}

impl StoreConfig {
    /// Builds the stores. For Redis this connects and sends a `PING`, so a
    /// wrong URL or an unreachable server fails here
    /// ([`StoreError::Unavailable`]) rather than at the first turn; an
    /// invalid configuration is [`StoreError::Backend`].
    pub async fn build(&self) -> Result<Stores, StoreError> {
        match self {
            #[cfg(feature = "memory")]
            StoreConfig::Memory(retention) => Ok(memory(retention)),
            StoreConfig::Redis(config) => Ok(RedisStores::connect(config.clone()).await?.into()),
        }
    }
}

#[cfg(feature = "memory")]
fn memory(retention: &looopy_stores_memory::MemoryRetention) -> Stores {
    let m = looopy_stores_memory::MemoryStores::with_retention(retention);
    Stores {
        tasks: m.tasks,
        messages: m.messages,
        artifacts: m.artifacts,
        agents: m.agents,
        events: m.events,
        locks: m.locks,
        push_configs: Arc::new(looopy_stores_memory::MemoryPushConfigStore::new()),
        task_records: Arc::new(looopy_stores_memory::MemoryTaskStore::with_retention(
            retention,
        )),
    }
}

impl From<RedisStores> for Stores {
    fn from(r: RedisStores) -> Self {
        Stores {
            tasks: r.tasks,
            messages: r.messages,
            artifacts: r.artifacts,
            agents: r.agents,
            events: r.events,
            locks: r.locks,
            task_records: r.task_records,
            push_configs: Arc::new(crate::RedisPushConfigStore::new(r.backend)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[derive(Deserialize)]
    struct File {
        store: StoreConfig,
    }

    #[test]
    #[allow(irrefutable_let_patterns)] // without the `memory` feature
    fn a_config_file_names_the_backend() {
        let file: File = toml::from_str(
            r#"
            [store]
            backend = "redis"
            url = "redis://cache:6379/2"
            pool_size = 4
            key_prefix = "svc"
            "#,
        )
        .unwrap();
        let StoreConfig::Redis(redis) = file.store else {
            panic!("expected redis");
        };
        assert_eq!(redis.url, "redis://cache:6379/2");
        assert_eq!(redis.pool_size, 4);
        assert_eq!(redis.key_prefix, "svc");
        assert_eq!(redis.task_ttl_secs, 86_400);

        #[cfg(feature = "memory")]
        {
            use looopy_stores_memory::MemoryRetention;
            let file: File = toml::from_str("[store]\nbackend = \"memory\"").unwrap();
            assert_eq!(file.store, StoreConfig::Memory(MemoryRetention::default()));
            let file: File =
                toml::from_str("[store]\nbackend = \"memory\"\nttl_secs = 60\nmax_entries = 500")
                    .unwrap();
            let StoreConfig::Memory(retention) = file.store else {
                panic!("expected memory");
            };
            assert_eq!((retention.ttl_secs, retention.max_entries), (60, 500));
            assert_eq!(retention.task_ttl_secs, 86_400);
            assert!(
                toml::from_str::<File>("[store]\nbackend = \"memory\"\nurl = \"x\"").is_err(),
                "a Redis key on the memory backend is refused"
            );
        }
        assert!(toml::from_str::<File>("[store]\nbackend = \"mongo\"").is_err());
        assert!(
            toml::from_str::<File>("[store]\nbackend = \"redis\"\nurll = \"x\"").is_err(),
            "unknown keys are refused"
        );
    }

    #[cfg(feature = "memory")]
    #[tokio::test]
    async fn memory_builds_without_io() {
        let retention = looopy_stores_memory::MemoryRetention {
            max_entries: 2,
            ..Default::default()
        };
        let stores = StoreConfig::Memory(retention).build().await.unwrap();
        for c in ["a", "b", "c"] {
            stores
                .messages
                .append(c, &[looopy_core::Message::user("hi")])
                .await
                .unwrap();
        }
        // The cap reached the store: the least recently used conversation went.
        assert_eq!(stores.messages.count("a").await.unwrap(), 0);
        assert_eq!(stores.messages.count("c").await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_bad_redis_config_is_refused() {
        let bad = StoreConfig::Redis(RedisConfig::default().with_key_prefix("a{b"));
        assert!(matches!(bad.build().await, Err(StoreError::Backend { .. })));
    }
}
