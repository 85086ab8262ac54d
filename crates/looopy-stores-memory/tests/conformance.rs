//! The in-memory stores pass the store conformance suite of looopy-testkit.

use std::sync::Arc;

use looopy_stores_memory::{MemoryTaskRecordStore, stores};
use looopy_testkit::conformance::{self, UniqueIds};

// `stores()` is the bundle an Agent and a server take, keeping everything
// (expiry and caps are checked in `retention.rs`).

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_stores_pass_the_whole_suite() {
    conformance::run_all(&stores(), &UniqueIds::new()).await;
}

#[tokio::test(flavor = "current_thread")]
async fn memory_stores_pass_on_a_single_thread() {
    conformance::run_all(&stores(), &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_suites_share_one_set_of_stores() {
    // As on a shared Redis: unique ids keep concurrent runs apart.
    let stores = stores();
    let (a, b) = (UniqueIds::new(), UniqueIds::with_prefix("second-run"));
    futures::join!(
        conformance::run_all(&stores, &a),
        conformance::run_all(&stores, &b)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn task_records_are_atomic_across_two_handles() {
    let records = Arc::new(MemoryTaskRecordStore::new());
    conformance::task_store_across_handles(records.clone(), records, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_stores_pass_the_turn_store_rules_through_the_default_methods() {
    let stores = stores();
    assert!(
        stores.turns.is_none(),
        "the memory stores have no turn store of their own"
    );
    let turns = Arc::new(looopy_core::store::SeparateStores {
        messages: stores.messages,
        states: Some(stores.agents),
        lock: Some(stores.locks),
        checkpoints: Some(stores.checkpoints),
    });
    conformance::turn_store(turns, &UniqueIds::new()).await;
}
