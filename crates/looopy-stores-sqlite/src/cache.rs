//! [`SqliteCacheStore`].

use std::time::Duration;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::cache::{CacheStore, CacheValue};
use sqlx::Row;

use crate::backend::{SqliteBackend, millis, now_ms};
use crate::error::Db;

/// The tool and model response caches in the `cache_entries` table: an
/// expired entry is never returned, and the prune deletes it.
#[derive(Debug, Clone)]
pub struct SqliteCacheStore {
    backend: SqliteBackend,
    prefix: String,
}

impl SqliteCacheStore {
    /// A cache on `backend` whose keys start with `prefix` (one per cache:
    /// `llm`, `tool`), so that two caches share the table without meeting.
    pub fn new(backend: SqliteBackend, prefix: impl Into<String>) -> Self {
        SqliteCacheStore {
            backend,
            prefix: prefix.into(),
        }
    }

    fn key(&self, key: &str) -> String {
        format!("{}:{key}", self.prefix)
    }
}

#[async_trait]
impl CacheStore for SqliteCacheStore {
    async fn get(&self, key: &str) -> Result<Option<CacheValue>, StoreError> {
        let row = sqlx::query("SELECT value FROM cache_entries WHERE key = ? AND expires_ms > ?")
            .bind(self.key(key))
            .bind(now_ms())
            .fetch_optional(self.backend.pool())
            .await
            .db("read the cache")?;
        match row {
            Some(row) => {
                let value: &str = row.try_get(0).db("read the cache")?;
                Ok(Some(serde_json::from_str(value)?))
            }
            None => Ok(None),
        }
    }

    async fn put(&self, key: &str, value: &CacheValue, ttl: Duration) -> Result<(), StoreError> {
        let expires = now_ms().saturating_add(millis(ttl));
        let body = serde_json::to_string(value)?;
        let mut tx = self.backend.write().await?;
        sqlx::query(
            "INSERT INTO cache_entries (key, expires_ms, value) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET expires_ms = ?2, value = ?3",
        )
        .bind(self.key(key))
        .bind(expires)
        .bind(body)
        .execute(tx.conn())
        .await
        .db("write the cache")?;
        tx.commit().await
    }
}
