//! The SQLite stores pass the store conformance suite of looopy-testkit,
//! each run on a database file in a temp directory.

use std::sync::Arc;

use looopy_stores_sqlite::{SqliteBackend, SqliteCacheStore, SqliteConfig};
use looopy_testkit::conformance::{self, UniqueIds};

async fn open(dir: &tempfile::TempDir) -> SqliteBackend {
    let config = SqliteConfig::new(dir.path().join("looopy.db"));
    SqliteBackend::open(config)
        .await
        .expect("open the database")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_stores_pass_the_whole_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = looopy_stores_sqlite::stores(open(&dir).await);
    conformance::run_all(&stores, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "current_thread")]
async fn sqlite_stores_pass_on_a_single_thread_with_one_connection() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = SqliteConfig {
        pool_size: 1,
        ..SqliteConfig::new(dir.path().join("one.db"))
    };
    let stores = looopy_stores_sqlite::connect(config).await.expect("open");
    conformance::run_all(&stores, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_suites_share_one_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = looopy_stores_sqlite::stores(open(&dir).await);
    let (a, b) = (UniqueIds::new(), UniqueIds::with_prefix("second-run"));
    futures::join!(
        conformance::run_all(&stores, &a),
        conformance::run_all(&stores, &b)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_backends_on_one_file_are_atomic_as_two_processes_would_be() {
    // Two pools, each with its own write gate: only SQLite's lock between them.
    let dir = tempfile::tempdir().expect("temp dir");
    let a = looopy_stores_sqlite::stores(open(&dir).await);
    let b = looopy_stores_sqlite::stores(open(&dir).await);
    conformance::task_store_across_handles(
        a.task_records.clone(),
        b.task_records.clone(),
        &UniqueIds::new(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sqlite_turn_store_passes_the_turn_store_rules() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = looopy_stores_sqlite::stores(open(&dir).await);
    let turns = stores.turns.expect("the SQLite stores have a turn store");
    conformance::turn_store(turns, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sqlite_cache_passes_the_cache_rules() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = Arc::new(SqliteCacheStore::new(open(&dir).await, "llm"));
    conformance::cache_store(cache, &UniqueIds::new()).await;
}
