//! [`MemoryCacheStore`]: values that expire, in a map.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use looopy_core::CacheStore;
use looopy_core::cache::CacheValue as Value;
use looopy_core::store::StoreError;

/// A [`CacheStore`] in memory. Expired values are dropped when read, and
/// all of them whenever the map has doubled since the last sweep, so that
/// keys never read again do not pile up.
#[derive(Debug, Default)]
pub struct MemoryCacheStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, (Value, Instant)>,
    /// Entries after the last sweep.
    swept_at: usize,
}

impl MemoryCacheStore {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl CacheStore for MemoryCacheStore {
    async fn get(&self, key: &str) -> Result<Option<Value>, StoreError> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match inner.entries.get(key) {
            Some((value, until)) if *until > Instant::now() => Ok(Some(value.clone())),
            Some(_) => {
                inner.entries.remove(key);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn put(&self, key: &str, value: &Value, ttl: Duration) -> Result<(), StoreError> {
        let now = Instant::now();
        let until = now
            .checked_add(ttl)
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.entries.insert(key.to_owned(), (value.clone(), until));
        if inner.entries.len() > 2 * inner.swept_at.max(64) {
            inner.entries.retain(|_, (_, until)| *until > now);
            inner.swept_at = inner.entries.len();
        }
        Ok(())
    }
}
