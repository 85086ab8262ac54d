//! Shared by the Redis integration tests: the test Redis and a unique prefix.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

pub mod cluster;

use looopy_stores_redis::{RedisConfig, RedisStores};
use looopy_testkit::TestRedis;
use looopy_testkit::conformance::UniqueIds;

/// The shared test Redis (`LOOOPY_TEST_REDIS_URL`) or one of this test's own.
pub fn redis() -> TestRedis {
    match looopy_testkit::test_redis() {
        Ok(redis) => redis,
        Err(e) => panic!("no Redis for the tests: {e} (run scripts/provision.sh redis)"),
    }
}

/// Settings for `url` under a key prefix no other run uses.
pub fn config(url: &str) -> RedisConfig {
    RedisConfig::new(url).with_key_prefix(UniqueIds::new().prefix().to_owned())
}

/// Every store, connected.
pub async fn stores(config: RedisConfig) -> RedisStores {
    match RedisStores::connect(config).await {
        Ok(stores) => stores,
        Err(e) => panic!("could not connect to the test Redis: {e}"),
    }
}

/// Deletes every key under the stores' prefix (tests on the shared Redis
/// leave nothing behind).
pub async fn cleanup(url: &str, stores: &RedisStores) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let pattern = format!("{}:*", stores.backend.keys().prefix());
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(pattern)
        .query_async(&mut conn)
        .await
        .unwrap();
    if !keys.is_empty() {
        let _: i64 = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}
