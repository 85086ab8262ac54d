//! Event followers wait on connections of their own: many of them never
//! starve the pool that appends and reads use.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use looopy_core::{AgentEvent, EventPayload, TaskState, TaskStatus};

fn event(task: &str, n: usize) -> AgentEvent {
    AgentEvent::new(
        task.into(),
        "ctx".into(),
        EventPayload::Text {
            text: n.to_string(),
        },
    )
}

fn done(task: &str) -> AgentEvent {
    AgentEvent::new(
        task.into(),
        "ctx".into(),
        EventPayload::StatusUpdate {
            status: TaskStatus::new(TaskState::Completed),
            is_final: true,
            metadata: Default::default(),
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_blocked_followers_do_not_block_a_pool_of_one() {
    let redis = support::redis();
    let config = support::config(redis.url())
        .with_pool_size(1)
        .with_follow_block(Duration::from_millis(300));
    let prefix = config.key_prefix.clone();
    let stores = support::stores(config).await;
    let followers: Vec<_> = (0..8)
        .map(|n| {
            let events = stores.events.clone();
            tokio::spawn(async move {
                let task = format!("task-{n}");
                events
                    .follow(&task, None)
                    .try_collect::<Vec<_>>()
                    .await
                    .unwrap()
            })
        })
        .collect();
    // Followers are blocked in XREAD (several block periods pass) while the
    // single pooled connection keeps serving appends and reads.
    tokio::time::sleep(Duration::from_millis(700)).await;
    for n in 0..8 {
        let task = format!("task-{n}");
        for k in 0..3 {
            stores
                .events
                .append(&task, Arc::new(event(&task, k)))
                .await
                .unwrap();
        }
        assert_eq!(stores.events.read(&task, None, 10).await.unwrap().len(), 3);
        stores
            .events
            .append(&task, Arc::new(done(&task)))
            .await
            .unwrap();
    }
    for (n, follower) in followers.into_iter().enumerate() {
        let got = tokio::time::timeout(Duration::from_secs(30), follower)
            .await
            .unwrap()
            .unwrap();
        let task = format!("task-{n}");
        assert_eq!(got, stores.events.read(&task, None, 10).await.unwrap());
        assert!(got.last().unwrap().event.is_final());
    }
    support::cleanup(redis.url(), &prefix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_id_is_not_found() {
    let redis = support::redis();
    let stores = support::stores(support::config(redis.url())).await;
    let err = stores.events.read("t", Some("42"), 10).await.unwrap_err();
    assert!(
        matches!(err, looopy_core::StoreError::NotFound { .. }),
        "{err:?}"
    );
    let items: Vec<_> =
        futures::StreamExt::collect::<Vec<_>>(stores.events.follow("t", Some("nope".into()))).await;
    assert_eq!(items.len(), 1);
    assert!(items[0].is_err());
}
