//! The test Redis Cluster: the shared one named by
//! `LOOOPY_TEST_REDIS_CLUSTER_URLS` (`cargo xtask ci` starts it), or three
//! masters of this test's own, started with `scripts/redis-cluster.sh`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use looopy_stores_redis::RedisConfig;
use looopy_testkit::conformance::UniqueIds;

/// Comma-separated node URLs of a shared test cluster.
pub const CLUSTER_URLS_ENV: &str = "LOOOPY_TEST_REDIS_CLUSTER_URLS";

/// A cluster to test on; a cluster of its own is stopped on drop.
#[derive(Debug)]
pub struct TestCluster {
    urls: Vec<String>,
    own: Option<PathBuf>,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/redis-cluster.sh")
}

impl TestCluster {
    /// The node URLs.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// Settings for the cluster under a key prefix no other run uses.
    pub fn config(&self) -> RedisConfig {
        RedisConfig::cluster(self.urls.clone())
            .with_key_prefix(UniqueIds::new().prefix().to_owned())
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        if let Some(dir) = &self.own {
            let _ = Command::new("bash")
                .arg(script())
                .arg("stop")
                .arg(dir)
                .status();
        }
    }
}

/// The shared test cluster, or a new one. `None` (after a loud line) only
/// when it cannot be started and `LOOOPY_SKIP_EXTERNAL=1` says Redis is not
/// provisioned here; otherwise a missing Redis fails the test.
pub fn cluster() -> Option<TestCluster> {
    if let Ok(urls) = std::env::var(CLUSTER_URLS_ENV)
        && !urls.trim().is_empty()
    {
        let urls = urls.split(',').map(|u| u.trim().to_owned()).collect();
        return Some(TestCluster { urls, own: None });
    }
    let dir =
        std::env::temp_dir().join(format!("looopy-test-cluster-{}", UniqueIds::new().prefix()));
    let out = Command::new("bash")
        .arg(script())
        .arg("start")
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| panic!("could not run scripts/redis-cluster.sh: {e}"));
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        if std::env::var("LOOOPY_SKIP_EXTERNAL").as_deref() == Ok("1") {
            eprintln!("\n!!!!! SKIPPED: no Redis Cluster ({why}) (LOOOPY_SKIP_EXTERNAL=1) !!!!!\n");
            return None;
        }
        panic!("could not start a Redis Cluster: {why} (run scripts/provision.sh redis)");
    }
    let urls = String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(',')
        .map(str::to_owned)
        .collect();
    Some(TestCluster {
        urls,
        own: Some(dir),
    })
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
