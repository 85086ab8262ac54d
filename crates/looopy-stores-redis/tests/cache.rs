//! The Redis cache store passes the cache conformance suite.

use crate::support;

use std::sync::Arc;

use looopy_stores_redis::RedisCacheStore;
use looopy_testkit::conformance::{self, UniqueIds};

#[tokio::test]
async fn redis_cache_store_passes_the_cache_suite() {
    let redis = support::redis();
    let backend = support::backend(support::config(redis.url())).await;
    conformance::cache_store(Arc::new(RedisCacheStore::new(backend)), &UniqueIds::new()).await;
}
