//! The in-memory stores pass the store conformance suite of looopy-testkit.

use std::sync::Arc;

use looopy_stores_memory::{MemoryPushConfigStore, MemoryStores, MemoryTaskStore};
use looopy_testkit::conformance::{self, StoreUnderTest, UniqueIds};

fn under_test(stores: &MemoryStores, task_records: &Arc<MemoryTaskStore>) -> StoreUnderTest {
    StoreUnderTest::new(
        stores.tasks.clone(),
        stores.messages.clone(),
        stores.artifacts.clone(),
        stores.agents.clone(),
        stores.events.clone(),
        stores.locks.clone(),
    )
    .with_task_records(task_records.clone())
    .with_push_configs(Arc::new(MemoryPushConfigStore::new()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_stores_pass_the_whole_suite() {
    let stores = MemoryStores::new();
    let records = Arc::new(MemoryTaskStore::new());
    conformance::run_all(&under_test(&stores, &records)).await;
}

#[tokio::test(flavor = "current_thread")]
async fn memory_stores_pass_on_a_single_thread() {
    let stores = MemoryStores::new();
    let records = Arc::new(MemoryTaskStore::new());
    conformance::run_all(&under_test(&stores, &records)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_suites_share_one_set_of_stores() {
    // As on a shared Redis: unique ids keep concurrent runs apart.
    let stores = MemoryStores::new();
    let records = Arc::new(MemoryTaskStore::new());
    let a = under_test(&stores, &records);
    let b = under_test(&stores, &records).with_ids(UniqueIds::with_prefix("second-run"));
    futures::join!(conformance::run_all(&a), conformance::run_all(&b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn task_records_are_atomic_across_two_handles() {
    let records = Arc::new(MemoryTaskStore::new());
    conformance::task_store_across_handles(records.clone(), records, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_stores_pass_the_turn_store_rules_through_the_default_methods() {
    let stores = MemoryStores::new();
    let turns = Arc::new(looopy_core::store::SeparateStores {
        messages: stores.messages.clone(),
        states: Some(stores.agents.clone()),
        lock: Some(stores.locks.clone()),
        checkpoints: Some(stores.tasks.clone()),
    });
    conformance::turn_store(turns, &conformance::UniqueIds::new()).await;
}
