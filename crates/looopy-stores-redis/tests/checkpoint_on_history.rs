//! A checkpoint that builds on the conversation's stored history
//! (`TaskCheckpoint::stored_history`) stores only the messages after it,
//! loads whole (the history's part read back from the message store, also
//! by a process that never saved it), keeps saving incrementally, and fails
//! with a typed error once that history was rewritten.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::store::HistoryMark;
use looopy_core::{History, Message};
use looopy_stores_redis::RedisBackend;
use looopy_testkit::checkpoints::{assert_history_rewritten, on_history};

const STORED: usize = 50;

/// How many messages the checkpoint's own list holds in Redis.
async fn listed(url: &str, backend: &RedisBackend, task: &str) -> usize {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("LLEN")
        .arg(backend.keys().checkpoint_messages(task))
        .query_async(&mut conn)
        .await
        .unwrap()
}

async fn epoch(url: &str, backend: &RedisBackend, ctx: &str) -> String {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("GET")
        .arg(backend.keys().messages_epoch(ctx))
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_on_the_stored_history_stores_only_the_turns_messages_and_loads_whole() {
    let redis = support::redis();
    let config = support::config(redis.url());
    let backend = support::backend(config.clone()).await;
    let stores = looopy_stores_redis::stores(backend.clone());
    let (ctx, task) = ("ctx-on-history", "task-on-history");
    let stored: Vec<Message> = (0..STORED)
        .map(|n| Message::user(format!("old {n}")))
        .collect();
    stores.messages.append(ctx, &stored).await.unwrap();
    let mark = HistoryMark {
        epoch: epoch(redis.url(), &backend, ctx).await,
        len: STORED,
    };

    let mut history = History::from(stored.clone());
    history.push(Message::assistant("the turn's first"));
    stores
        .checkpoints
        .save(&on_history(ctx, task, history.clone(), Some(&mark)))
        .await
        .unwrap();
    assert_eq!(
        listed(redis.url(), &backend, task).await,
        1,
        "only the turn's own message is written"
    );
    history.push(Message::assistant("the turn's second"));
    let second = on_history(ctx, task, history.clone(), Some(&mark));
    stores.checkpoints.save(&second).await.unwrap();
    assert_eq!(listed(redis.url(), &backend, task).await, 2);

    let loaded = stores.checkpoints.load(task).await.unwrap().unwrap();
    assert_eq!(loaded, second, "loads with the stored history in front");

    // Another process (a resume elsewhere) loads it whole and saves on.
    let other = support::stores(config).await;
    let loaded = other.checkpoints.load(task).await.unwrap().unwrap();
    assert_eq!(loaded.messages.to_vec(), history.to_vec());
    history.push(Message::assistant("after the resume"));
    let third = on_history(ctx, task, history.clone(), Some(&mark));
    other.checkpoints.save(&third).await.unwrap();
    assert_eq!(listed(redis.url(), &backend, task).await, 3);
    assert_eq!(other.checkpoints.load(task).await.unwrap().unwrap(), third);

    // The history is rewritten (a compaction): the checkpoint cannot be
    // rebuilt, and says why.
    stores
        .messages
        .replace_range(ctx, 0..10, &[Message::user("summary")])
        .await
        .unwrap();
    assert_history_rewritten(stores.checkpoints.load(task).await, ctx, task);
    support::cleanup(redis.url(), backend.keys().prefix()).await;
}
