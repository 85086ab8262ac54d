//! [`CacheStore`]: short-lived values by key, for the response caches of
//! the loop (`looopy_loop::layers::cache`).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::store::StoreError;

/// What a [`CacheStore`] holds: any JSON value (named here so that stores
/// need no JSON dependency of their own).
pub type CacheValue = Value;

/// Which cache answered (see `EventPayload::CacheHit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    /// The model-answer cache: a model call was answered from it.
    Llm,
    /// The tool-result cache: a tool call was answered from it.
    Tool,
}

/// Values that expire, by key. Implementations: memory
/// (`looopy-stores-memory`), Redis (`looopy-stores-redis`); the
/// conformance suite is `looopy_testkit::conformance::cache`.
#[async_trait]
pub trait CacheStore: Send + Sync {
    /// The value under `key`, unless it is missing or expired.
    async fn get(&self, key: &str) -> Result<Option<Value>, StoreError>;
    /// Stores `value` under `key` for `ttl`, replacing what was there.
    async fn put(&self, key: &str, value: &Value, ttl: Duration) -> Result<(), StoreError>;
}
