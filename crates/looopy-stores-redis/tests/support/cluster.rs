//! Helpers for tests on the test Redis Cluster
//! ([`looopy_testkit::redis_cluster`]).

use std::collections::BTreeSet;

use looopy_stores_redis::RedisConfig;
use looopy_testkit::conformance::UniqueIds;
#[allow(unused_imports, reason = "not every test binary uses it")]
pub use looopy_testkit::redis_cluster::{TestCluster, test_redis_cluster as cluster};

/// Store settings for a test cluster.
pub trait ClusterConfig {
    /// Settings for the cluster under a key prefix no other run uses.
    fn config(&self) -> RedisConfig;
}

impl ClusterConfig for TestCluster {
    fn config(&self) -> RedisConfig {
        RedisConfig::cluster(self.urls().to_vec())
            .with_key_prefix(UniqueIds::new().prefix().to_owned())
    }
}

/// `host:port` of every master, from `CLUSTER SLOTS` (one entry per slot
/// range: start, end, then the master `[host, port, id, ...]`, then replicas).
pub async fn master_addrs(cluster: &TestCluster) -> BTreeSet<String> {
    let client = redis::Client::open(cluster.urls()[0].as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let ranges: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await
        .unwrap();
    ranges
        .into_iter()
        .map(|range| {
            let redis::Value::Array(master) = &range[2] else {
                panic!("CLUSTER SLOTS: {range:?}");
            };
            let host: String = redis::from_redis_value_ref(&master[0]).unwrap();
            let port: u16 = redis::from_redis_value_ref(&master[1]).unwrap();
            format!("{host}:{port}")
        })
        .collect()
}

/// Deletes every key under `prefix` on every master of the cluster.
pub async fn cleanup(cluster: &TestCluster, prefix: &str) {
    for addr in master_addrs(cluster).await {
        let client = redis::Client::open(format!("redis://{addr}")).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}:*"))
            .query_async(&mut conn)
            .await
            .unwrap();
        for key in keys {
            // One key at a time: a DEL of several keys must keep to one slot.
            let _: i64 = redis::cmd("DEL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    }
}
