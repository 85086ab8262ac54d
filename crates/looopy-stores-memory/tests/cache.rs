//! The memory cache store passes the cache conformance suite.

use std::sync::Arc;

use looopy_stores_memory::MemoryCacheStore;
use looopy_testkit::conformance::{self, UniqueIds};

#[tokio::test]
async fn memory_cache_store_passes_the_cache_suite() {
    conformance::cache_store(Arc::new(MemoryCacheStore::new()), &UniqueIds::new()).await;
}
