//! The PostgreSQL stores pass the store conformance suite of
//! looopy-testkit against a real server, task records and turn store
//! included.

use crate::support;

use std::sync::Arc;

use looopy_stores_postgres::PostgresCacheStore;
use looopy_testkit::conformance::{self, UniqueIds};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_stores_pass_the_whole_suite() {
    let Some(pg) = support::postgres("postgres_stores_pass_the_whole_suite") else {
        return;
    };
    let backend = support::backend(support::config(pg.url())).await;
    let stores = looopy_stores_postgres::stores(backend.clone());
    conformance::run_all(&stores, &UniqueIds::new()).await;
    support::drop_schema(&backend).await;
}

#[tokio::test(flavor = "current_thread")]
async fn postgres_stores_pass_on_a_single_thread_with_one_connection() {
    let Some(pg) = support::postgres("postgres_stores_pass_on_a_single_thread") else {
        return;
    };
    let backend = support::backend(support::config(pg.url()).with_pool_size(1)).await;
    let stores = looopy_stores_postgres::stores(backend.clone());
    conformance::run_all(&stores, &UniqueIds::new()).await;
    support::drop_schema(&backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_suites_share_one_schema_and_one_pool() {
    let Some(pg) = support::postgres("two_suites_share_one_schema_and_one_pool") else {
        return;
    };
    let backend = support::backend(support::config(pg.url())).await;
    let stores = looopy_stores_postgres::stores(backend.clone());
    let a = UniqueIds::new();
    let b = UniqueIds::with_prefix(format!("second-{}", UniqueIds::new().prefix()));
    futures::join!(
        conformance::run_all(&stores, &a),
        conformance::run_all(&stores, &b)
    );
    support::drop_schema(&backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn task_records_are_atomic_across_two_pools() {
    // Two pools on one schema, as two server processes would have.
    let Some(pg) = support::postgres("task_records_are_atomic_across_two_pools") else {
        return;
    };
    let config = support::config(pg.url());
    let a = support::backend(config.clone()).await;
    let b = support::backend(config).await;
    conformance::task_store_across_handles(
        looopy_stores_postgres::stores(a.clone()).task_records,
        looopy_stores_postgres::stores(b).task_records,
        &UniqueIds::new(),
    )
    .await;
    support::drop_schema(&a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_postgres_turn_store_passes_the_turn_store_rules() {
    let Some(pg) = support::postgres("the_postgres_turn_store_passes_the_turn_store_rules") else {
        return;
    };
    let backend = support::backend(support::config(pg.url())).await;
    let turns = looopy_stores_postgres::stores(backend.clone())
        .turns
        .expect("the PostgreSQL stores have a turn store");
    conformance::turn_store(turns, &UniqueIds::new()).await;
    support::drop_schema(&backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_cache_store_passes_the_cache_suite() {
    let Some(pg) = support::postgres("the_postgres_cache_store_passes_the_cache_suite") else {
        return;
    };
    let backend = support::backend(support::config(pg.url())).await;
    conformance::cache_store(
        Arc::new(PostgresCacheStore::new(backend.clone())),
        &UniqueIds::new(),
    )
    .await;
    support::drop_schema(&backend).await;
}
