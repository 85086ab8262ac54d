//! Shared by the Redis integration tests: the test Redis and a unique prefix.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

pub mod cluster;

use looopy_core::store::Stores;
use looopy_stores_redis::{RedisBackend, RedisConfig};
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

/// A pool on the test Redis, connected (for what only Redis has: the key
/// layout, a store built on the same pool).
pub async fn backend(config: RedisConfig) -> RedisBackend {
    match RedisBackend::connect(config).await {
        Ok(backend) => backend,
        Err(e) => panic!("could not connect to the test Redis: {e}"),
    }
}

/// Every store, connected.
pub async fn stores(config: RedisConfig) -> Stores {
    looopy_stores_redis::stores(backend(config).await)
}

/// Deletes every key under `prefix` (tests on the shared Redis leave
/// nothing behind).
pub async fn cleanup(url: &str, prefix: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let pattern = format!("{prefix}:*");
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
