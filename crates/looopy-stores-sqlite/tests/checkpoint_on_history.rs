//! A checkpoint that builds on the conversation's stored history
//! (`TaskCheckpoint::stored_history`) keeps only the turn's own messages in
//! its row, loads whole (also through another handle on the file, as a
//! process that never saved it would), and fails with a typed error once
//! that history was rewritten. A checkpoint written by schema version 1
//! (the whole checkpoint in `body`) still loads after the upgrade.

use chrono::Utc;
use looopy_core::store::HistoryMark;
use looopy_core::{History, Message};
use looopy_stores_sqlite::{SqliteBackend, SqliteConfig};
use looopy_testkit::checkpoints::{
    STORED, on_history, rewrite_fails_the_checkpoint, saves_on_the_stored_history, saves_whole,
    store_history,
};
use sqlx::Row;
use sqlx::sqlite::SqlitePool;

/// A second look at the file, past the stores.
async fn raw(path: &std::path::Path) -> SqlitePool {
    SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("open the file")
}

/// How many messages the checkpoint's row holds.
async fn kept(pool: &SqlitePool, task: &str) -> i64 {
    sqlx::query("SELECT json_array_length(messages) FROM checkpoints WHERE task_id = ?")
        .bind(task)
        .fetch_one(pool)
        .await
        .expect("the row")
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_on_the_stored_history_keeps_only_the_turns_messages_and_loads_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("looopy.db");
    let config = SqliteConfig::new(&path).with_prune_interval(None);
    let stores = looopy_stores_sqlite::stores(SqliteBackend::open(config.clone()).await.unwrap());
    let pool = raw(&path).await;
    let (ctx, task) = ("ctx-on-history", "task-on-history");
    let stored = store_history(&stores, ctx).await;
    let epoch: String = sqlx::query("SELECT epoch FROM histories WHERE context_id = ?")
        .bind(ctx)
        .fetch_one(&pool)
        .await
        .unwrap()
        .get(0);
    let mark = HistoryMark { epoch, len: STORED };
    let kept = async |task: &str| kept(&pool, task).await as usize;

    // Another handle on the file loads it whole and saves on.
    let other = looopy_stores_sqlite::stores(SqliteBackend::open(config).await.unwrap());
    let history =
        saves_on_the_stored_history(&stores, &other, (ctx, task), (&stored, &mark), kept).await;

    // A checkpoint without a mark keeps every message.
    let whole = saves_whole(&stores, ctx, history, kept).await;

    // The history is rewritten (a compaction): the checkpoint cannot be
    // rebuilt, and says why; the one without a mark is untouched.
    rewrite_fails_the_checkpoint(&stores, ctx, task).await;
    assert_eq!(
        stores.checkpoints.load("task-whole").await.unwrap(),
        Some(whole)
    );
}

#[tokio::test]
async fn a_version_1_checkpoint_loads_after_the_upgrade() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("looopy.db");
    let old = on_history(
        "ctx",
        "task",
        History::from(vec![Message::user("a"), Message::assistant("b")]),
        None,
    );
    {
        // A file as version 1 wrote it.
        let pool = SqlitePool::connect(&format!("sqlite://{}?mode=rwc", path.display()))
            .await
            .unwrap();
        sqlx::raw_sql(include_str!("../migrations/0001_initial.sql"))
            .execute(&pool)
            .await
            .unwrap();
        sqlx::raw_sql(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY NOT NULL, applied_at TEXT NOT NULL);
             INSERT INTO schema_version VALUES (1, '2026-01-01T00:00:00Z');",
        )
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO checkpoints (task_id, context_id, saved_ms, body) VALUES (?, ?, ?, ?)",
        )
        .bind("task")
        .bind("ctx")
        .bind(Utc::now().timestamp_millis())
        .bind(serde_json::to_string(&old).unwrap())
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    let backend = SqliteBackend::open(SqliteConfig::new(&path).with_prune_interval(None))
        .await
        .expect("the file is brought forward");
    assert_eq!(
        backend.schema_version().await.unwrap(),
        looopy_stores_sqlite::SCHEMA_VERSION
    );
    let stores = looopy_stores_sqlite::stores(backend);
    assert_eq!(stores.checkpoints.load("task").await.unwrap(), Some(old));
}

#[tokio::test]
async fn the_bundles_turn_store_works_over_the_bundles_own_stores() {
    // An Agent builds its checkpoints on the stored history, and hands a
    // turn's artifacts to the turn's end, only when the turn store's
    // checkpoints and artifacts are the very stores it was given.
    use looopy_core::store::{ArtifactStore, CheckpointStore, MessageStore};
    let dir = tempfile::tempdir().expect("temp dir");
    let config = SqliteConfig::new(dir.path().join("looopy.db")).with_prune_interval(None);
    let stores = looopy_stores_sqlite::connect(config).await.unwrap();
    let turns = stores.turns.as_ref().expect("a turn store");
    assert!(std::ptr::addr_eq(
        turns.checkpoints().expect("checkpoints") as *const dyn CheckpointStore,
        std::sync::Arc::as_ptr(&stores.checkpoints)
    ));
    assert!(std::ptr::addr_eq(
        turns.artifacts().expect("artifacts") as *const dyn ArtifactStore,
        std::sync::Arc::as_ptr(&stores.artifacts)
    ));
    assert!(std::ptr::addr_eq(
        turns.messages() as *const dyn MessageStore,
        std::sync::Arc::as_ptr(&stores.messages)
    ));
}
