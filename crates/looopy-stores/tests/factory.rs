//! A binary picks its backend from configuration: the same suite passes on
//! `Stores` built from a TOML table naming Redis or memory.
#![cfg(feature = "redis")]

use looopy_core::StoreError;
use looopy_stores::{StoreConfig, Stores};
use looopy_testkit::conformance::{self, UniqueIds};

#[derive(serde::Deserialize)]
struct Settings {
    store: StoreConfig,
}

fn from_toml(text: &str) -> StoreConfig {
    match toml::from_str::<Settings>(text) {
        Ok(settings) => settings.store,
        Err(e) => panic!("bad settings: {e}"),
    }
}

async fn build(config: &StoreConfig) -> Stores {
    match config.build().await {
        Ok(stores) => stores,
        Err(e) => panic!("could not build the stores: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stores_built_from_configuration_pass_the_suite() {
    let redis = match looopy_testkit::test_redis() {
        Ok(redis) => redis,
        Err(e) => panic!("no Redis for the tests: {e} (run scripts/provision.sh redis)"),
    };
    let prefix = UniqueIds::new().prefix().to_owned();
    let config = from_toml(&format!(
        "[store]\nbackend = \"redis\"\nurl = \"{}\"\nkey_prefix = \"{prefix}\"\npool_size = 4\n",
        redis.url()
    ));
    conformance::run_all(&build(&config).await, &UniqueIds::new()).await;
}

#[cfg(feature = "memory")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_stores_built_from_configuration_pass_the_suite() {
    let memory = from_toml("[store]\nbackend = \"memory\"\n");
    conformance::run_all(&build(&memory).await, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_redis_fails_the_build_with_unavailable() {
    // A port nothing listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(1);
    let config = from_toml(&format!(
        "[store]\nbackend = \"redis\"\nurl = \"redis://127.0.0.1:{port}\"\nconnect_timeout_ms = 500\n"
    ));
    let result = config.build().await;
    assert!(
        matches!(result, Err(StoreError::Unavailable { .. })),
        "got {:?}",
        result.map(|_| ())
    );
}
