//! The prune deletes what expired, in batches, and nothing else.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use looopy_core::cache::CacheStore;
use looopy_core::record::ExecutionRecord;
use looopy_core::store::{CheckpointStore, TaskCheckpoint, TaskRecord};
use looopy_core::{AgentEvent, EventPayload, Message, TaskState, TaskStatus};
use looopy_stores_sqlite::{SqliteBackend, SqliteCacheStore, SqliteCheckpointStore, SqliteConfig};
use looopy_testkit::checkpoints;
use serde_json::json;

fn checkpoint(task: &str, context: &str) -> TaskCheckpoint {
    checkpoints::working(context, task, Default::default())
}

#[tokio::test]
async fn expired_rows_go_in_batches_and_the_rest_stays() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = SqliteConfig {
        prune_batch: 2,
        ..SqliteConfig::new(dir.path().join("looopy.db"))
            .with_ttl(Some(Duration::from_secs(3600)))
            .with_prune_interval(None)
    };
    let backend = SqliteBackend::open(config).await.expect("open");
    let stores = looopy_stores_sqlite::stores(backend.clone());
    let checkpoints = SqliteCheckpointStore::new(backend.clone());
    let records = stores
        .records
        .clone()
        .expect("the SQLite stores keep records");
    for n in 0..5 {
        let ctx = format!("ended-{n}");
        stores
            .messages
            .append(&ctx, &[Message::user("hi")])
            .await
            .expect("append");
        checkpoints
            .save(&checkpoint(&format!("task-{n}"), &ctx))
            .await
            .expect("save");
        let event = AgentEvent::new(
            format!("task-{n}").into(),
            ctx.clone().into(),
            EventPayload::Text { text: "x".into() },
        );
        stores
            .events
            .append(&format!("task-{n}"), Arc::new(event))
            .await
            .expect("event");
        let turn = ExecutionRecord::new(format!("task-{n}"), &ctx, "agent");
        records.put(&turn).await.expect("execution record");
        let record = TaskRecord::new(
            format!("task-{n}"),
            ctx,
            None,
            TaskStatus::new(TaskState::Completed),
        );
        stores.task_records.put(&record).await.expect("record");
    }
    // A conversation whose turn still holds its lease is not ended.
    stores
        .messages
        .append("running", &[Message::user("busy")])
        .await
        .expect("append");
    stores
        .locks
        .try_acquire(
            "running",
            "me",
            Some("task-r"),
            Duration::from_secs(30 * 86_400),
        )
        .await
        .expect("lease");
    let cache = SqliteCacheStore::new(backend.clone(), "tool");
    cache
        .put("k", &json!(1), Duration::from_secs(3600))
        .await
        .expect("cache");

    // Within every TTL: nothing goes.
    let soon = backend
        .prune_at(Utc::now() + chrono::Duration::minutes(30))
        .await
        .expect("prune");
    assert_eq!(soon.total(), 0, "{soon:?}");
    assert_eq!(stores.messages.count("ended-0").await.expect("count"), 1);

    // Past the conversations' TTL, not the checkpoints'.
    let later = backend
        .prune_at(Utc::now() + chrono::Duration::hours(2))
        .await
        .expect("prune");
    assert_eq!(later.conversations, 5, "{later:?}");
    assert_eq!(later.checkpoints, 0, "{later:?}");
    assert_eq!(
        later.task_rows, 15,
        "events, records and execution records of 5 tasks: {later:?}"
    );
    assert_eq!(later.expired, 1, "the cache entry: {later:?}");
    for n in 0..5 {
        assert_eq!(
            stores
                .messages
                .count(&format!("ended-{n}"))
                .await
                .expect("count"),
            0
        );
        assert_eq!(
            stores
                .task_records
                .get(&format!("task-{n}"))
                .await
                .expect("get"),
            None
        );
        assert!(
            records
                .list_task(&format!("task-{n}"))
                .await
                .expect("list_task")
                .is_empty()
        );
        assert!(
            stores
                .events
                .read(&format!("task-{n}"), None, 10)
                .await
                .expect("read")
                .is_empty()
        );
        assert!(
            checkpoints
                .load(&format!("task-{n}"))
                .await
                .expect("load")
                .is_some()
        );
    }
    assert_eq!(
        stores.messages.count("running").await.expect("count"),
        1,
        "a held conversation stays"
    );

    // Past a day, the checkpoints go too.
    let next_day = backend
        .prune_at(Utc::now() + chrono::Duration::hours(25))
        .await
        .expect("prune");
    assert_eq!(next_day.checkpoints, 5, "{next_day:?}");
    assert_eq!(checkpoints.load("task-0").await.expect("load"), None);
}

#[tokio::test]
async fn the_periodic_prune_runs_on_its_own() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = SqliteConfig::new(dir.path().join("looopy.db"))
        .with_prune_interval(Some(Duration::from_secs(1)));
    let backend = SqliteBackend::open(config).await.expect("open");
    let cache = SqliteCacheStore::new(backend.clone(), "llm");
    cache
        .put("k", &json!("v"), Duration::from_millis(100))
        .await
        .expect("put");
    let count = || async {
        let row: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM cache_entries")
            .fetch_one(
                &sqlx::SqlitePool::connect(&format!(
                    "sqlite://{}",
                    dir.path().join("looopy.db").display()
                ))
                .await
                .expect("connect"),
            )
            .await
            .expect("count");
        row.0
    };
    assert_eq!(count().await, 1);
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(
        count().await,
        0,
        "the expired entry was pruned without a call"
    );
}
