//! Event followers across processes: a follower on one pool sees what
//! another pool appends as it is appended (woken by `LISTEN/NOTIFY`, not
//! by its poll), and ends after the final event.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use looopy_core::{AgentEvent, EventPayload, TaskState, TaskStatus};

fn text(task: &str, text: &str) -> Arc<AgentEvent> {
    Arc::new(AgentEvent::new(
        task.into(),
        "ctx".into(),
        EventPayload::Text { text: text.into() },
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_wakes_on_appends_of_another_pool() {
    let Some(pg) = support::postgres("a_follower_wakes_on_appends_of_another_pool") else {
        return;
    };
    let mut config = support::config(pg.url());
    // A poll far longer than the test: only a notification wakes it.
    config.follow_poll_ms = 60_000;
    let reader = support::backend(config.clone()).await;
    let writer = support::stores(config).await;
    let reader_stores = looopy_stores_postgres::stores(reader.clone());
    let task = "task-1";
    writer
        .events
        .append(task, text(task, "before"))
        .await
        .unwrap();

    let mut follower = reader_stores.events.follow(task, None);
    let first = follower.next().await.expect("replayed").unwrap();
    assert!(matches!(&*first.event.payload, EventPayload::Text { text } if text == "before"));

    for n in 0..3 {
        let appended = Instant::now();
        writer
            .events
            .append(task, text(task, &format!("live {n}")))
            .await
            .unwrap();
        let event = tokio::time::timeout(Duration::from_secs(10), follower.next())
            .await
            .expect("the follower woke on the notification")
            .expect("an event")
            .unwrap();
        assert!(
            matches!(&*event.event.payload, EventPayload::Text { text } if *text == format!("live {n}"))
        );
        assert!(appended.elapsed() < Duration::from_secs(10));
    }
    let done = Arc::new(AgentEvent::new(
        task.into(),
        "ctx".into(),
        EventPayload::StatusUpdate {
            status: TaskStatus::new(TaskState::Completed),
            is_final: true,
            metadata: Default::default(),
        },
    ));
    writer.events.append(task, done).await.unwrap();
    let last = tokio::time::timeout(Duration::from_secs(10), follower.next())
        .await
        .expect("the final event came")
        .expect("an event")
        .unwrap();
    assert!(last.event.is_final());
    assert!(
        tokio::time::timeout(Duration::from_secs(10), follower.next())
            .await
            .expect("the follower ended")
            .is_none()
    );
    drop(follower);
    support::drop_schema(&reader).await;
}
