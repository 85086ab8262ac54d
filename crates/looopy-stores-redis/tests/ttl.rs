//! Keys expire: checkpoints after `task_ttl_secs` (one day by default),
//! everything else after `ttl_secs` when set, and never otherwise.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::Acquire;
use looopy_core::store::Stores;
use looopy_core::store::{StoredEvent, TaskCheckpoint, TaskRecord};
use looopy_core::{AgentEvent, Artifact, EventPayload, Message, Part, TaskState, TaskStatus};
use looopy_stores_redis::KeyLayout;
use looopy_testkit::checkpoints;

fn checkpoint(task: &str) -> TaskCheckpoint {
    checkpoints::working("ctx", task, vec![Message::user("hi")].into())
}

/// Writes one thing of every kind under `ctx` / `task`; returns their keys.
async fn write_everything(stores: &Stores, k: &KeyLayout, ctx: &str, task: &str) -> Vec<String> {
    stores.checkpoints.save(&checkpoint(task)).await.unwrap();
    stores
        .messages
        .append(ctx, &[Message::user("m")])
        .await
        .unwrap();
    stores
        .artifacts
        .append_parts(ctx, task, "a", &[Part::text("p")])
        .await
        .unwrap();
    stores
        .artifacts
        .put(ctx, task, &Artifact::new("b", vec![Part::text("q")]))
        .await
        .unwrap();
    stores
        .agents
        .save(&checkpoints::ready_state(ctx, Some("owner")))
        .await
        .unwrap();
    let event = |text: &str| {
        Arc::new(AgentEvent::new(
            task.into(),
            ctx.into(),
            EventPayload::Text { text: text.into() },
        ))
    };
    let first = stores.events.append(task, event("e")).await.unwrap();
    let last = stores.events.append(task, event("f")).await.unwrap();
    // A rewritten stream keeps the expiry it had (or its lack of one).
    let replacement = StoredEvent {
        id: first.clone(),
        event: event("e2"),
    };
    assert!(
        stores
            .events
            .replace_entries(task, &last, &[first], vec![replacement])
            .await
            .unwrap()
    );
    stores
        .task_records
        .put(&TaskRecord::new(
            task,
            ctx,
            Some("owner".into()),
            TaskStatus::new(TaskState::Working),
        ))
        .await
        .unwrap();
    stores.task_records.request_cancel(task).await.unwrap();
    vec![
        k.messages(ctx),
        k.artifacts(ctx),
        k.artifact(ctx, "a"),
        k.artifact_parts(ctx, "a"),
        k.artifact(ctx, "b"),
        k.agent(ctx),
        k.owner_agents("owner"),
        k.events(task),
        k.task_record(task),
        k.task_cancel(task),
        k.owner_tasks("owner"),
        k.context_tasks(ctx),
        k.all_tasks(),
    ]
}

async fn pttl(client: &redis::Client, key: &str) -> i64 {
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("PTTL")
        .arg(key)
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_expire_after_a_day_and_the_rest_never_by_default() {
    let redis = support::redis();
    let backend = support::backend(support::config(redis.url())).await;
    let stores = looopy_stores_redis::stores(backend.clone());
    let client = redis::Client::open(redis.url()).unwrap();
    let k = backend.keys();
    let keys = write_everything(&stores, k, "c1", "t1").await;
    for key in [k.checkpoint("t1"), k.checkpoint_messages("t1")] {
        let ms = pttl(&client, &key).await;
        assert!(
            ms > 23 * 3600 * 1000 && ms <= 24 * 3600 * 1000,
            "{key} must expire in a day, PTTL {ms}"
        );
    }
    for key in &keys {
        assert_eq!(pttl(&client, key).await, -1, "{key} must not expire");
    }
    assert!(
        stores
            .locks
            .try_acquire("c1", "me", None, Duration::from_secs(5))
            .await
            .unwrap()
            == Acquire::Acquired
    );
    let lease = pttl(&client, &k.lock("c1")).await;
    assert!(
        lease > 0 && lease <= 5000,
        "a lease expires with its ttl: {lease}"
    );
    support::cleanup(redis.url(), k.prefix()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_ttls_make_every_key_expire() {
    let redis = support::redis();
    let config = support::config(redis.url())
        .with_task_ttl(Some(Duration::from_secs(1)))
        .with_ttl(Some(Duration::from_secs(1)));
    let backend = support::backend(config).await;
    let stores = looopy_stores_redis::stores(backend.clone());
    let client = redis::Client::open(redis.url()).unwrap();
    let k = backend.keys();
    let mut keys = write_everything(&stores, k, "c2", "t2").await;
    keys.extend([k.checkpoint("t2"), k.checkpoint_messages("t2")]);
    for key in &keys {
        let ms = pttl(&client, key).await;
        assert!(
            ms > 0 && ms <= 1000,
            "{key} must expire within a second, PTTL {ms}"
        );
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for key in &keys {
        assert_eq!(pttl(&client, key).await, -2, "{key} must be gone");
    }
    assert!(stores.checkpoints.load("t2").await.unwrap().is_none());
    assert_eq!(stores.messages.count("c2").await.unwrap(), 0);
    assert!(stores.artifacts.list("c2").await.unwrap().is_empty());
    assert!(
        stores
            .agents
            .list_by_owner("owner", 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        stores
            .task_records
            .list(None, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}
