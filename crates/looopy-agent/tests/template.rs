//! Agents made from one `AgentTemplate`: one loop for all, each its own
//! conversation, state and owner.

#![allow(clippy::unwrap_used)]
use crate::support;

use looopy_agent::{AgentError, AgentTemplate};
use looopy_core::LlmResponse;
use looopy_testkit::ScriptedLlm;
use support::*;

#[tokio::test]
async fn agents_from_one_template_share_the_loop_and_keep_their_own_conversations() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("hello alice"))
        .respond(LlmResponse::text("hello bob"));
    let template = AgentTemplate::builder()
        .llm(llm.clone())
        .stores(&stores)
        .template()
        .unwrap();
    let alice = template.agent_owned_by("c-alice", "alice").unwrap();
    let bob = template.agent_owned_by("c-bob", "bob").unwrap();
    assert!(std::ptr::eq(
        alice.agent_loop().config(),
        bob.agent_loop().config()
    ));

    let (_, a) = turn(&alice, "hi, I am alice").await;
    let (_, b) = turn(&bob, "hi, I am bob").await;
    assert_eq!(a.message.unwrap().text(), "hello alice");
    assert_eq!(b.message.unwrap().text(), "hello bob");

    // Each conversation holds its own messages, and its state its owner.
    let texts = |c: &'static str| {
        let messages = stores.messages.clone();
        async move {
            let m = messages.load(c).await.unwrap();
            m.iter().map(|m| m.text()).collect::<Vec<_>>()
        }
    };
    assert_eq!(texts("c-alice").await, ["hi, I am alice", "hello alice"]);
    assert_eq!(texts("c-bob").await, ["hi, I am bob", "hello bob"]);
    let owner = |c: &'static str| {
        let states = stores.agents.clone();
        async move { states.load(c).await.unwrap().unwrap().owner }
    };
    assert_eq!(owner("c-alice").await.as_deref(), Some("alice"));
    assert_eq!(owner("c-bob").await.as_deref(), Some("bob"));
}

#[tokio::test]
async fn a_template_refuses_an_empty_context_id_and_keeps_its_own_owner() {
    let stores = looopy_stores_memory::stores();
    let template = AgentTemplate::builder()
        .llm(ScriptedLlm::new().respond(LlmResponse::text("ok")))
        .stores(&stores)
        .owner("team")
        .template()
        .unwrap();
    assert!(matches!(template.agent(""), Err(AgentError::Config(_))));
    let agent = template.agent("c-team").unwrap();
    turn(&agent, "go").await;
    let state = stores.agents.load("c-team").await.unwrap().unwrap();
    assert_eq!(state.owner.as_deref(), Some("team"));
}
