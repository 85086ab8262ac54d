//! The test Redis Cluster: the shared one named by
//! [`LOOOPY_TEST_REDIS_CLUSTER_URLS`](CLUSTER_URLS_ENV) (`cargo xtask ci`
//! starts it), or three masters of the test's own, started with
//! `scripts/redis-cluster.sh` and stopped when dropped.

use std::path::PathBuf;
use std::process::Command;

use crate::conformance::UniqueIds;

/// Comma-separated node URLs of a shared test cluster.
pub const CLUSTER_URLS_ENV: &str = "LOOOPY_TEST_REDIS_CLUSTER_URLS";

/// A cluster to test on; a cluster of its own is stopped on drop.
#[derive(Debug)]
pub struct TestCluster {
    urls: Vec<String>,
    own: Option<PathBuf>,
}

fn script() -> PathBuf {
    crate::external::repo_root().join("scripts/redis-cluster.sh")
}

impl TestCluster {
    /// The node URLs.
    pub fn urls(&self) -> &[String] {
        &self.urls
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
pub fn test_redis_cluster() -> Option<TestCluster> {
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
