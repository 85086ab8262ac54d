//! The Redis stores pass the store conformance suite of looopy-testkit,
//! task records included.

use crate::support;

use looopy_testkit::conformance::{self, UniqueIds};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_stores_pass_the_whole_suite() {
    let redis = support::redis();
    let stores = support::stores(support::config(redis.url())).await;
    conformance::run_all(&stores, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "current_thread")]
async fn redis_stores_pass_on_a_single_thread_with_one_connection() {
    let redis = support::redis();
    let stores = support::stores(support::config(redis.url()).with_pool_size(1)).await;
    conformance::run_all(&stores, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_suites_share_one_prefix_and_one_pool() {
    // Unique ids keep concurrent runs apart, even under one key prefix.
    let redis = support::redis();
    let stores = support::stores(support::config(redis.url())).await;
    let a = UniqueIds::new();
    let b = UniqueIds::with_prefix(format!("second-{}", UniqueIds::new().prefix()));
    futures::join!(
        conformance::run_all(&stores, &a),
        conformance::run_all(&stores, &b)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn task_records_are_atomic_across_two_connections() {
    // Two pools on one Redis, as two server processes would have.
    let redis = support::redis();
    let config = support::config(redis.url());
    let a = support::stores(config.clone()).await;
    let b = support::stores(config).await;
    conformance::task_store_across_handles(
        a.task_records.clone(),
        b.task_records.clone(),
        &UniqueIds::new(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_redis_turn_store_passes_the_turn_store_rules() {
    let redis = support::redis();
    let stores = support::stores(support::config(redis.url())).await;
    let turns = stores.turns.expect("the Redis stores have a turn store");
    conformance::turn_store(turns, &UniqueIds::new()).await;
}
