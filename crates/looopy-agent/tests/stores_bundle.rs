//! `AgentBuilder::stores`: one call wires every store of a bundle, and the
//! Agent uses each of them.

use std::time::Duration;

use looopy_agent::Agent;
use looopy_core::store::Acquire;
use looopy_core::{AuthContext, LlmResponse, Message, TaskState};
use looopy_testkit::ScriptedLlm;

#[tokio::test]
async fn an_agent_built_from_a_bundle_keeps_its_turns_in_the_bundles_stores() {
    let stores = looopy_stores_memory::stores_with_retention(&Default::default());
    let llm = ScriptedLlm::new().respond(LlmResponse::text("Hello!"));
    let agent = Agent::builder("ctx-bundle")
        .llm(llm)
        .stores(&stores)
        .build()
        .unwrap();
    let summary = agent
        .execute_turn(Some(Message::user("Hi")), Some(AuthContext::new("alice")))
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(summary.state, TaskState::Completed);

    // The history and the lifecycle metadata are the bundle's.
    assert_eq!(stores.messages.count("ctx-bundle").await.unwrap(), 2);
    let state = stores.agents.load("ctx-bundle").await.unwrap().unwrap();
    assert_eq!(state.turn_count, 1);
    // The turn's lease went back to the bundle's lock.
    assert!(stores.locks.lease("ctx-bundle").await.unwrap().is_none());
}

#[tokio::test]
async fn the_bundles_turn_lock_keeps_a_second_owner_out() {
    let stores = looopy_stores_memory::stores_with_retention(&Default::default());
    let held = stores
        .locks
        .try_acquire("ctx-held", "another-process", None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(held, Acquire::Acquired);
    let agent = Agent::builder("ctx-held")
        .llm(ScriptedLlm::new().respond(LlmResponse::text("never")))
        .stores(&stores)
        .build()
        .unwrap();
    let Err(error) = agent.execute_turn(Some(Message::user("Hi")), None).await else {
        panic!("the lease is another owner's: the turn must not start");
    };
    assert!(error.is_busy(), "{error}");
    assert_eq!(stores.messages.count("ctx-held").await.unwrap(), 0);
}
