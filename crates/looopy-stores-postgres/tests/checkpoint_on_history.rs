//! A checkpoint that builds on the conversation's stored history
//! (`TaskCheckpoint::stored_history`) keeps only the turn's own messages in
//! its row, loads whole (also through another backend, as a replica that
//! never saved it would), and fails with a typed error once that history
//! was rewritten. A checkpoint written by schema version 1 (the whole
//! checkpoint in `body`) still loads.

use crate::support;

use looopy_core::store::HistoryMark;
use looopy_stores_postgres::PostgresBackend;
use looopy_testkit::checkpoints::{
    STORED, rewrite_fails_the_checkpoint, saves_on_the_stored_history, saves_whole, store_history,
};

/// How many messages the checkpoint's row holds.
async fn kept(backend: &PostgresBackend, task: &str) -> i32 {
    sqlx::query_scalar(
        "SELECT json_array_length(messages::json) FROM checkpoints WHERE task_id = $1",
    )
    .bind(task)
    .fetch_one(backend.pool())
    .await
    .expect("the row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_on_the_stored_history_keeps_only_the_turns_messages_and_loads_whole() {
    let Some(pg) = support::postgres("a_checkpoint_on_the_stored_history") else {
        return;
    };
    let config = support::config(pg.url());
    let backend = support::backend(config.clone()).await;
    let stores = looopy_stores_postgres::stores(backend.clone());
    let (ctx, task) = ("ctx-on-history", "task-on-history");
    let stored = store_history(&stores, ctx).await;
    let epoch: String = sqlx::query_scalar("SELECT epoch FROM histories WHERE context_id = $1")
        .bind(ctx)
        .fetch_one(backend.pool())
        .await
        .unwrap();
    let mark = HistoryMark { epoch, len: STORED };
    let kept = async |task: &str| kept(&backend, task).await as usize;

    // Another replica loads it whole and saves on.
    let other = looopy_stores_postgres::stores(support::backend(config).await);
    let history =
        saves_on_the_stored_history(&stores, &other, (ctx, task), (&stored, &mark), kept).await;

    // A checkpoint without a mark keeps every message.
    let whole = saves_whole(&stores, ctx, history.clone(), kept).await;

    // As schema version 1 wrote it: the whole checkpoint in `body`.
    sqlx::query("INSERT INTO checkpoints (task_id, context_id, body) VALUES ($1, $2, $3)")
        .bind("task-v1")
        .bind(ctx)
        .bind(serde_json::to_string(&whole).unwrap())
        .execute(backend.pool())
        .await
        .unwrap();
    let v1 = stores.checkpoints.load("task-v1").await.unwrap().unwrap();
    assert_eq!(v1.messages.to_vec(), history.to_vec());

    // The history is rewritten (a compaction): the checkpoint cannot be
    // rebuilt, and says why; the one without a mark is untouched.
    rewrite_fails_the_checkpoint(&stores, ctx, task).await;
    assert_eq!(
        stores.checkpoints.load("task-whole").await.unwrap(),
        Some(whole)
    );
    support::drop_schema(&backend).await;
}
