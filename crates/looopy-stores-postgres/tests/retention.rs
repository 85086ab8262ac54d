//! Retention: the prune deletes what outlived its lifetime, in bounded
//! batches, and keeps a conversation whose turn still holds its lease.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use looopy_core::record::ExecutionRecord;
use looopy_core::store::{AgentState, PushConfig, TaskCheckpoint, TaskRecord};
use looopy_core::{AgentEvent, Artifact, EventPayload, Message, Part, TaskState, TaskStatus};
use looopy_testkit::checkpoints;

fn checkpoint(task: &str, ctx: &str) -> TaskCheckpoint {
    checkpoints::working(ctx, task, vec![Message::user("hi")].into())
}

fn state(ctx: &str) -> AgentState {
    AgentState {
        turn_count: 1,
        ..checkpoints::ready_state(ctx, Some("alice"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_rows_go_in_bounded_batches_and_a_leased_conversation_stays() {
    let Some(pg) = support::postgres("expired_rows_go") else {
        return;
    };
    let mut config = support::config(pg.url()).with_retention(1, 1);
    config.prune_batch = 2;
    let backend = support::backend(config).await;
    let stores = looopy_stores_postgres::stores(backend.clone());

    for n in 0..5 {
        stores
            .checkpoints
            .save(&checkpoint(&format!("task-{n}"), "old"))
            .await
            .unwrap();
    }
    stores
        .messages
        .append("old", &[Message::user("hi")])
        .await
        .unwrap();
    stores
        .artifacts
        .put("old", "task-0", &Artifact::new("a", vec![Part::text("x")]))
        .await
        .unwrap();
    stores.agents.save(&state("old")).await.unwrap();
    let event = AgentEvent::new(
        "task-0".into(),
        "old".into(),
        EventPayload::Text { text: "t".into() },
    );
    stores
        .events
        .append("task-0", Arc::new(event))
        .await
        .unwrap();
    stores
        .task_records
        .put(&TaskRecord::new(
            "task-0",
            "old",
            None,
            TaskStatus::new(TaskState::Completed),
        ))
        .await
        .unwrap();
    stores.task_records.request_cancel("task-0").await.unwrap();
    let records = stores
        .records
        .clone()
        .expect("the PostgreSQL stores keep records");
    for turn in [1, 2] {
        let mut record = ExecutionRecord::new("task-0", "old", "agent");
        record.turn_number = Some(turn);
        records.put(&record).await.unwrap();
    }
    stores
        .push_configs
        .put(&PushConfig {
            task_id: "task-0".into(),
            id: "hook".into(),
            url: "http://127.0.0.1:1/hook".into(),
            token: None,
            authentication: None,
            protocol_version: "1.0".into(),
        })
        .await
        .unwrap();
    // A conversation whose turn runs (its lease is held) is kept.
    stores
        .messages
        .append("running", &[Message::user("hi")])
        .await
        .unwrap();
    stores.agents.save(&state("running")).await.unwrap();
    assert_eq!(
        stores
            .locks
            .try_acquire("running", "owner", Some("task-r"), Duration::from_secs(60))
            .await
            .unwrap(),
        looopy_core::store::Acquire::Acquired
    );

    // Nothing is old yet.
    assert_eq!(backend.prune().await.unwrap().checkpoints, 0);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // A fresh write after the wait is kept.
    stores
        .checkpoints
        .save(&checkpoint("fresh", "new"))
        .await
        .unwrap();
    records
        .put(&ExecutionRecord::new("fresh", "new", "agent"))
        .await
        .unwrap();

    let report = backend.prune().await.unwrap();
    assert_eq!(
        report.checkpoints, 5,
        "five checkpoints, two a batch: {report:?}"
    );
    assert_eq!(report.conversations, 1, "{report:?}");
    assert_eq!(report.artifacts, 1, "{report:?}");
    assert_eq!(report.agent_states, 1, "{report:?}");
    assert_eq!(report.event_logs, 1, "{report:?}");
    assert_eq!(report.task_records, 1, "{report:?}");
    assert_eq!(report.push_configs, 1, "{report:?}");
    assert_eq!(report.execution_records, 2, "two turns: {report:?}");

    for n in 0..5 {
        assert_eq!(
            stores.checkpoints.load(&format!("task-{n}")).await.unwrap(),
            None
        );
    }
    assert!(stores.checkpoints.load("fresh").await.unwrap().is_some());
    assert_eq!(stores.messages.count("old").await.unwrap(), 0);
    assert!(stores.artifacts.list("old").await.unwrap().is_empty());
    assert_eq!(stores.agents.load("old").await.unwrap(), None);
    assert!(
        stores
            .events
            .read("task-0", None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(stores.task_records.get("task-0").await.unwrap(), None);
    assert!(!stores.task_records.take_cancel("task-0").await.unwrap());
    assert!(stores.push_configs.list("task-0").await.unwrap().is_empty());
    assert!(records.list_task("task-0").await.unwrap().is_empty());
    assert!(records.get("fresh").await.unwrap().is_some());
    let counts: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM messages WHERE context_id = 'old'),
                (SELECT count(*) FROM artifact_parts WHERE context_id = 'old')",
    )
    .fetch_one(backend.pool())
    .await
    .unwrap();
    assert_eq!(counts, (0, 0), "no orphaned rows are left");

    assert_eq!(stores.messages.count("running").await.unwrap(), 1);
    assert!(stores.agents.load("running").await.unwrap().is_some());
    support::drop_schema(&backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_prune_deletes_expired_checkpoints() {
    let Some(pg) = support::postgres("the_background_prune_deletes_expired_checkpoints") else {
        return;
    };
    let config = support::config(pg.url())
        .with_retention(1, 0)
        .with_prune_interval_secs(1);
    let backend = support::backend(config).await;
    let stores = looopy_stores_postgres::stores(backend.clone());
    stores
        .checkpoints
        .save(&checkpoint("t", "c"))
        .await
        .unwrap();
    stores
        .messages
        .append("c", &[Message::user("kept")])
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while stores.checkpoints.load("t").await.unwrap().is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the background prune did not delete an expired checkpoint"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Without `ttl_secs`, conversations are kept.
    assert_eq!(stores.messages.count("c").await.unwrap(), 1);
    support::drop_schema(&backend).await;
}
