//! An Agent deletes the checkpoint of a turn that ended for good once its
//! messages are saved (nothing will resume it), and keeps the checkpoint of
//! a turn that waits for input.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use looopy_core::LlmResponse;
use looopy_testkit::ScriptedLlm;
use support::*;

#[tokio::test]
async fn a_completed_turn_leaves_no_checkpoint() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["l1"]))
        .respond(LlmResponse::text("done"));
    let agent = builder("c-ckpt-done", &llm, &stores)
        .tools(TestTools::default())
        .task_store(stores.checkpoints.clone())
        .build()
        .unwrap();
    let (_, summary) = turn(&agent, "look it up").await;
    assert!(
        stores
            .checkpoints
            .load(&summary.task_id)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_turn_waiting_for_input_keeps_its_checkpoint() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(call("client", &["c1"]));
    let tools = Arc::new(TestTools::default());
    let agent = builder("c-ckpt-input", &llm, &stores)
        .tools_shared(tools)
        .task_store(stores.checkpoints.clone())
        .build()
        .unwrap();
    let (_, summary) = turn(&agent, "ask the client").await;
    let checkpoint = stores.checkpoints.load(&summary.task_id).await.unwrap();
    assert!(checkpoint.is_some(), "the input-required turn's checkpoint");
}
