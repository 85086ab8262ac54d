//! [`StoreConfig`]: the backend picked by configuration.

use looopy_core::StoreError;
use looopy_core::store::Stores;
use serde::{Deserialize, Serialize};

/// Which backend holds the stores, as a configuration file names it:
///
/// ```toml
/// [store]
/// backend = "redis"            # or "memory", "sqlite", "postgres"
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
    /// Everything in Redis (feature `redis`).
    #[cfg(feature = "redis")]
    Redis(looopy_stores_redis::RedisConfig),
    /// Everything in PostgreSQL (feature `postgres`): `url`, `pool_size`,
    /// `schema`, the retention and the prune
    /// ([`looopy_stores_postgres::PostgresConfig`]).
    #[cfg(feature = "postgres")]
    Postgres(looopy_stores_postgres::PostgresConfig),
    /// Everything in one SQLite database file (feature `sqlite`): `path`,
    /// and the knobs of [`looopy_stores_sqlite::SqliteConfig`].
    #[cfg(feature = "sqlite")]
    Sqlite(looopy_stores_sqlite::SqliteConfig),
}

impl StoreConfig {
    /// Builds the stores. For Redis this connects and sends a `PING`, for
    /// PostgreSQL it connects and migrates the schema, so a
    /// wrong URL or an unreachable server fails here
    /// ([`StoreError::Unavailable`]) rather than at the first turn; an
    /// invalid configuration is [`StoreError::Backend`]. For SQLite this
    /// opens (or creates) the file and brings its schema up to date; a
    /// file that cannot be opened, or one of a newer Looopy, is
    /// [`StoreError::Backend`] with what to do.
    pub async fn build(&self) -> Result<Stores, StoreError> {
        match self {
            #[cfg(feature = "memory")]
            StoreConfig::Memory(retention) => {
                Ok(looopy_stores_memory::stores_with_retention(retention))
            }
            #[cfg(feature = "redis")]
            StoreConfig::Redis(config) => looopy_stores_redis::connect(config.clone()).await,
            #[cfg(feature = "postgres")]
            StoreConfig::Postgres(config) => looopy_stores_postgres::connect(config.clone()).await,
            #[cfg(feature = "sqlite")]
            StoreConfig::Sqlite(config) => looopy_stores_sqlite::connect(config.clone()).await,
        }
    }

    /// Whether what the stores hold outlives this process: false for the
    /// memory stores, true for SQLite, Redis and PostgreSQL. Where it does not, nothing another
    /// process could read is worth writing for it, such as the loop's
    /// checkpoints, which only serve to carry a turn on after its process
    /// died.
    pub fn outlives_process(&self) -> bool {
        match self {
            #[cfg(feature = "memory")]
            StoreConfig::Memory(_) => false,
            #[cfg(feature = "redis")]
            StoreConfig::Redis(_) => true,
            #[cfg(feature = "postgres")]
            StoreConfig::Postgres(_) => true,
            #[cfg(feature = "sqlite")]
            StoreConfig::Sqlite(_) => true,
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

    #[cfg(feature = "redis")]
    #[test]
    #[allow(irrefutable_let_patterns)] // without the `memory` feature
    fn a_config_file_names_redis() {
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
        assert!(
            toml::from_str::<File>("[store]\nbackend = \"redis\"\nurll = \"x\"").is_err(),
            "unknown keys are refused"
        );
    }

    #[cfg(feature = "memory")]
    #[test]
    #[allow(irrefutable_let_patterns)] // without the `redis` feature
    fn a_config_file_names_memory() {
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

    #[cfg(feature = "postgres")]
    #[test]
    #[allow(irrefutable_let_patterns)] // without the other features
    fn a_config_file_names_postgres() {
        let file: File = toml::from_str(
            r#"
            [store]
            backend = "postgres"
            url = "postgres://looopy@db:5432/agents"
            pool_size = 12
            "#,
        )
        .unwrap();
        assert!(file.store.outlives_process());
        let StoreConfig::Postgres(pg) = file.store else {
            panic!("expected postgres");
        };
        assert_eq!(pg.url, "postgres://looopy@db:5432/agents");
        assert_eq!(pg.pool_size, 12);
        assert_eq!(pg.schema, "looopy");
        assert_eq!(pg.task_ttl_secs, 86_400);
        assert!(
            toml::from_str::<File>("[store]\nbackend = \"postgres\"\nkey_prefix = \"x\"").is_err(),
            "a Redis key on the PostgreSQL backend is refused"
        );
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn an_unreachable_postgres_is_unavailable() {
        let mut pg = looopy_stores_postgres::PostgresConfig::new("postgres://x@127.0.0.1:1/db");
        pg.connect_timeout_ms = 300;
        let built = StoreConfig::Postgres(pg).build().await;
        assert!(
            matches!(built, Err(StoreError::Unavailable { .. })),
            "{:?}",
            built.map(|_| ())
        );
    }

    #[cfg(feature = "sqlite")]
    #[test]
    #[allow(irrefutable_let_patterns)] // without the other features
    fn a_config_file_names_sqlite() {
        let file: File = toml::from_str(
            "[store]\nbackend = \"sqlite\"\npath = \"/var/lib/looopy/db.sqlite\"\nttl_secs = 600",
        )
        .unwrap();
        let StoreConfig::Sqlite(sqlite) = &file.store else {
            panic!("expected sqlite");
        };
        assert_eq!(sqlite.path.to_str(), Some("/var/lib/looopy/db.sqlite"));
        assert_eq!(sqlite.ttl_secs, 600);
        assert_eq!(sqlite.task_ttl_secs, 86_400);
        assert!(file.store.outlives_process());
        assert!(
            toml::from_str::<File>("[store]\nbackend = \"sqlite\"\nurl = \"x\"").is_err(),
            "a Redis key on the SQLite backend is refused"
        );
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn sqlite_builds_on_a_file_that_outlives_the_stores() {
        let dir = tempfile::tempdir().unwrap();
        let config = StoreConfig::Sqlite(looopy_stores_sqlite::SqliteConfig::new(
            dir.path().join("s.db"),
        ));
        let stores = config.build().await.unwrap();
        assert!(
            stores.turns.is_some(),
            "SQLite ends a turn in one transaction"
        );
        stores
            .messages
            .append("c", &[looopy_core::Message::user("hi")])
            .await
            .unwrap();
        drop(stores);
        let again = config.build().await.unwrap();
        assert_eq!(again.messages.count("c").await.unwrap(), 1);
    }

    #[test]
    fn an_unknown_backend_is_refused() {
        let error = toml::from_str::<File>("[store]\nbackend = \"mongo\"")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("mongo"), "{error}");
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

    #[cfg(feature = "redis")]
    #[tokio::test]
    async fn a_bad_redis_config_is_refused() {
        let bad =
            StoreConfig::Redis(looopy_stores_redis::RedisConfig::default().with_key_prefix("a{b"));
        assert!(matches!(bad.build().await, Err(StoreError::Backend { .. })));
    }
}
