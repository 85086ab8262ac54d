//! A checkpoint that builds on the conversation's stored history
//! (`TaskCheckpoint::stored_history`) stores only the messages after it,
//! loads whole (the history's part read back from the message store, also
//! by a process that never saved it), keeps saving incrementally, and fails
//! with a typed error once that history was rewritten.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::store::HistoryMark;
use looopy_stores_redis::RedisBackend;
use looopy_testkit::checkpoints::{
    STORED, rewrite_fails_the_checkpoint, saves_on_the_stored_history, store_history,
};

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
    let stored = store_history(&stores, ctx).await;
    let mark = HistoryMark {
        epoch: epoch(redis.url(), &backend, ctx).await,
        len: STORED,
    };

    // Another process (a resume elsewhere) loads it whole and saves on.
    let other = support::stores(config).await;
    saves_on_the_stored_history(
        &stores,
        &other,
        (ctx, task),
        (&stored, &mark),
        async |task: &str| listed(redis.url(), &backend, task).await,
    )
    .await;

    // The history is rewritten (a compaction): the checkpoint cannot be
    // rebuilt, and says why.
    rewrite_fails_the_checkpoint(&stores, ctx, task).await;
    support::cleanup(redis.url(), backend.keys().prefix()).await;
}
