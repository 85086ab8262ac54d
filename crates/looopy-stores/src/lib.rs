//! The store backend picked by configuration: [`StoreConfig`] names one
//! (`backend = "memory"`, `"sqlite"`, `"redis"` or `"postgres"`, as the `[store]` table of a
//! `looopy.toml` does) and [`StoreConfig::build`] returns the one
//! [`Stores`] bundle an Agent and an A2A server take.
//!
//! Each backend sits behind a feature, so that a binary compiles only the
//! ones it can pick: `memory` (on by default, `looopy-stores-memory`),
//! `sqlite` (`looopy-stores-sqlite`, with sqlx and a bundled SQLite),
//! `redis` (`looopy-stores-redis`, with its Redis client and pool) and
//! `postgres` (`looopy-stores-postgres`, with sqlx and its pool). The
//! backend crates themselves depend on `looopy-core` and their own client
//! library only.
//!
//! ```
//! # #[cfg(feature = "memory")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use looopy_stores::StoreConfig;
//!
//! #[derive(serde::Deserialize)]
//! struct Settings {
//!     store: StoreConfig,
//! }
//!
//! let settings: Settings = toml::from_str(
//!     r#"
//!     [store]
//!     backend = "memory"
//!     ttl_secs = 3600       # forget a conversation an hour after its last write
//!     max_entries = 10000   # and keep at most this many
//!     "#,
//! )?;
//! let stores = settings.store.build().await?;
//! stores.messages.append("ctx-1", &[looopy_core::Message::user("hi")]).await?;
//! assert_eq!(stores.messages.count("ctx-1").await?, 1);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "memory"))]
//! # fn main() {}
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;

pub use config::StoreConfig;
pub use looopy_core::store::Stores;

/// The retention of the memory backend (`StoreConfig::Memory`).
#[cfg(feature = "memory")]
pub use looopy_stores_memory::MemoryRetention;
/// The settings of the PostgreSQL backend (`StoreConfig::Postgres`).
#[cfg(feature = "postgres")]
pub use looopy_stores_postgres::PostgresConfig;
/// The settings of the Redis backend (`StoreConfig::Redis`).
#[cfg(feature = "redis")]
pub use looopy_stores_redis::RedisConfig;
/// The settings of the SQLite backend (`StoreConfig::Sqlite`).
#[cfg(feature = "sqlite")]
pub use looopy_stores_sqlite::SqliteConfig;
