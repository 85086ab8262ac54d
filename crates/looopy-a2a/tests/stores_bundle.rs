//! `A2aServer::with_stores`: a server on a `Stores` bundle keeps its task
//! records and events in the bundle's stores.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_a2a::A2aServer;
use looopy_core::TaskState;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_server_on_a_bundle_records_its_tasks_there() {
    let stores = looopy_stores_memory::stores_with_retention(&Default::default());
    let server = A2aServer::with_stores(ScriptedRunner::hello(), &stores).build();
    let running = serve(server, &SharedStores::default()).await;

    let r = rpc(&running.url, None, "message/send", v03_message("hi")).await;
    let task_id = r["result"]["id"].as_str().unwrap().to_owned();

    eventually(async || {
        let record = stores.task_records.get(&task_id).await.unwrap();
        record.is_some_and(|r| r.status.state == TaskState::Completed)
    })
    .await;
    let events = stores.events.read(&task_id, None, 100).await.unwrap();
    assert!(
        events.iter().any(|e| e.event.is_final()),
        "the turn's final event is in the bundle's event log"
    );
    running.stop().await;
}
