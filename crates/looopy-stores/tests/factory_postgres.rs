//! A binary picks PostgreSQL from configuration: the suite passes on
//! `Stores` built from a TOML table naming it.
#![cfg(feature = "postgres")]

use looopy_stores::StoreConfig;
use looopy_testkit::conformance::{self, UniqueIds};

#[derive(serde::Deserialize)]
struct Settings {
    store: StoreConfig,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_stores_built_from_configuration_pass_the_suite() {
    let Some(pg) = looopy_testkit::test_postgres_or_skip("factory_postgres") else {
        return;
    };
    let ids = UniqueIds::new();
    let tail = &ids.prefix()[ids.prefix().len() - 32..];
    let text = format!(
        "[store]\nbackend = \"postgres\"\nurl = \"{}\"\npool_size = 4\nschema = \"f_{tail}\"\nprune_interval_secs = 0\n",
        pg.url()
    );
    let settings: Settings = match toml::from_str(&text) {
        Ok(settings) => settings,
        Err(e) => panic!("bad settings: {e}"),
    };
    assert!(settings.store.outlives_process());
    let stores = match settings.store.build().await {
        Ok(stores) => stores,
        Err(e) => panic!("could not build the stores: {e}"),
    };
    conformance::run_all(&stores, &ids).await;
    let turns = stores.turns.clone().expect("PostgreSQL has a turn store");
    conformance::turn_store(turns, &ids).await;
}
