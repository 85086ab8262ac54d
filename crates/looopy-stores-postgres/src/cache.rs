//! [`PostgresCacheStore`]: the loop's response caches, one row a key with
//! its expiry (PostgreSQL's clock); expired rows read as missing and the
//! prune deletes them.

use std::time::Duration;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::cache::{CacheStore, CacheValue};

use crate::backend::{PostgresBackend, Retry, millis};
use crate::error::bad_json;

/// Values that expire, in PostgreSQL (for the loop's tool and model
/// response caches).
#[derive(Debug, Clone)]
pub struct PostgresCacheStore {
    backend: PostgresBackend,
}

impl PostgresCacheStore {
    /// The store on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresCacheStore { backend }
    }
}

#[async_trait]
impl CacheStore for PostgresCacheStore {
    async fn get(&self, key: &str) -> Result<Option<CacheValue>, StoreError> {
        let pool = self.backend.pool();
        let body: Option<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar(
                    "SELECT body FROM cache_entries WHERE key = $1 AND expires_at > clock_timestamp()",
                )
                .bind(key)
                .fetch_optional(pool)
                .await
            })
            .await?;
        body.map(|b| serde_json::from_str(&b).map_err(|e| bad_json("cache value", e)))
            .transpose()
    }

    async fn put(&self, key: &str, value: &CacheValue, ttl: Duration) -> Result<(), StoreError> {
        let body = serde_json::to_string(value)?;
        let pool = self.backend.pool();
        let (body, ttl) = (&body, millis(ttl));
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "INSERT INTO cache_entries (key, body, expires_at)
                     VALUES ($1, $2, clock_timestamp() + $3::float8 * interval '1 millisecond')
                     ON CONFLICT (key) DO UPDATE SET body = EXCLUDED.body, expires_at = EXCLUDED.expires_at",
                )
                .bind(key)
                .bind(body)
                .bind(ttl)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }
}
