//! An Agent deletes the checkpoint of a turn that ended for good once its
//! messages are saved (nothing will resume it), and keeps the checkpoint of
//! a turn that waits for input. An Agent built without checkpoints writes
//! none, answers its client tools all the same, and refuses to resume.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_agent::TurnOptions;
use looopy_core::{LlmResponse, TaskState};
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
        .tools(tools)
        .task_store(stores.checkpoints.clone())
        .build()
        .unwrap();
    let (_, summary) = turn(&agent, "ask the client").await;
    let checkpoint = stores.checkpoints.load(&summary.task_id).await.unwrap();
    assert!(checkpoint.is_some(), "the input-required turn's checkpoint");
}

#[tokio::test]
async fn without_checkpoints_a_turn_writes_none_and_cannot_be_resumed() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("client", &["c1"]))
        .respond(LlmResponse::text("thanks"));
    // The bundle names a checkpoint store; `without_checkpoints` drops it.
    let agent = builder("c-no-ckpt", &llm, &stores)
        .tools(TestTools::default())
        .stores(&stores)
        .without_checkpoints()
        .build()
        .unwrap();
    assert!(agent.agent_loop().checkpoint_store().is_none());

    // A turn waiting for input keeps its checkpoint when there is a store
    // (the test above): here there is none to keep.
    let (_, waiting) = turn(&agent, "ask the client").await;
    assert_eq!(waiting.state, TaskState::InputRequired);
    let kept = stores.checkpoints.load(&waiting.task_id).await.unwrap();
    assert!(kept.is_none(), "no checkpoint was written");

    // The answer is taken from the history, not from a checkpoint.
    let answered = send(&agent, client_answer("c1", serde_json::json!("ok"))).await;
    assert_eq!(answered.state, TaskState::Completed);
    assert_eq!(answered.message.unwrap().text(), "thanks");

    // Carrying a turn on needs a checkpoint: the resumed turn says why not.
    // (Without the bundle's turn lock, which would want a stranded lease.)
    let agent = builder("c-no-ckpt", &llm, &stores)
        .task_store(stores.checkpoints.clone())
        .without_checkpoints()
        .build()
        .unwrap();
    let resumed = agent
        .resume_turn(&waiting.task_id, TurnOptions::new())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(resumed.state, TaskState::Failed);
    let text = resumed.message.unwrap().text();
    assert!(text.contains("CheckpointStore"), "{text}");
}
