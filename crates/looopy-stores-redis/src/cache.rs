//! [`RedisCacheStore`]: one JSON string per key, expiring by Redis itself.

use std::time::Duration;

use async_trait::async_trait;
use looopy_core::CacheStore;
use looopy_core::StoreError;
use looopy_core::cache::CacheValue;

use crate::backend::{RedisBackend, Retry};

/// A [`CacheStore`] on Redis: `P:cache:<key>` holds the value as JSON, set
/// with `PX` so that Redis drops it when its time-to-live passes. Every
/// process on the same Redis and prefix shares the cache.
#[derive(Debug, Clone)]
pub struct RedisCacheStore {
    backend: RedisBackend,
}

impl RedisCacheStore {
    /// A cache on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisCacheStore { backend }
    }

    fn key(&self, key: &str) -> String {
        format!("{}:cache:{key}", self.backend.keys().prefix())
    }
}

#[async_trait]
impl CacheStore for RedisCacheStore {
    async fn get(&self, key: &str) -> Result<Option<CacheValue>, StoreError> {
        let mut get = redis::cmd("GET");
        get.arg(self.key(key));
        let json: Option<String> = self.backend.query(&get, Retry::Safe).await?;
        Ok(match json {
            Some(json) => Some(serde_json::from_str(&json)?),
            None => None,
        })
    }

    async fn put(&self, key: &str, value: &CacheValue, ttl: Duration) -> Result<(), StoreError> {
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut set = redis::cmd("SET");
        set.arg(self.key(key))
            .arg(serde_json::to_string(value)?)
            .arg("PX")
            .arg(ms);
        self.backend.query::<()>(&set, Retry::Safe).await
    }
}
