//! Graceful shutdown: open streams end, running turns get the grace period
//! and are then cancelled (and record it).
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use looopy_core::TaskState;
use looopy_core::store::TaskRecordStore;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_ends_streams_and_cancels_turns_after_the_grace() {
    let stores = SharedStores::default();
    let runner = ScriptedRunner::new(vec![vec![working(), Step::UntilCancelled]]);
    let server = serve(
        builder(runner, &stores)
            .shutdown_grace(Duration::from_millis(100))
            .build(),
        &stores,
    )
    .await;
    let mut stream = stream_v1(&server.url, v1_message("forever")).await;
    let task_id = stream.next().await.unwrap().data["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    stream.next().await.unwrap(); // working

    let stopping = tokio::spawn(server.stop());
    // The stream ends (the server closes it), without waiting for the turn.
    while stream.next().await.is_some() {}
    tokio::time::timeout(Duration::from_secs(20), stopping)
        .await
        .unwrap()
        .unwrap();
    let record = stores.tasks.get(&task_id).await.unwrap().unwrap();
    assert_eq!(record.status.state, TaskState::Canceled);
}
