//! The sliding window bounds what the model sees, never splitting a tool
//! call from its results, while the store keeps everything.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::{Agent, AgentLoop, WindowConfig, WindowedLlm};
use looopy_core::{LlmResponse, Message};
use looopy_testkit::ScriptedLlm;
use std::sync::Arc;
use support::*;

fn texts(messages: &looopy_core::History) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            if m.tool_calls.is_empty() {
                m.text()
            } else {
                format!("call {}", m.tool_calls[0].id)
            }
        })
        .collect()
}

#[tokio::test]
async fn the_model_sees_a_tool_safe_window_and_the_store_keeps_everything() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["a"]))
        .respond(LlmResponse::text("ans1"))
        .respond(call("lookup", &["b"]))
        .respond(LlmResponse::text("ans2"));
    let agent = builder("c-window", &llm, &stores)
        .tools(TestTools::default())
        .system_prompt("rules")
        .window(WindowConfig::max_messages(3))
        .build()
        .unwrap();
    turn(&agent, "u1").await;
    turn(&agent, "u2").await;
    let requests = llm.requests();
    let seen: Vec<Vec<String>> = requests.iter().map(|r| texts(&r.messages)).collect();
    assert_eq!(seen[0], vec!["u1"]);
    assert_eq!(seen[1], vec!["u1", "call a", "result of a"]);
    // Three would start at the result of a: the window moves past it.
    assert_eq!(seen[2], vec!["ans1", "u2"]);
    // Inside the turn the window holds between iterations too.
    assert_eq!(seen[3], vec!["u2", "call b", "result of b"]);
    for r in &requests {
        assert_eq!(r.system_prompt.as_deref(), Some("rules"));
        assert_tool_pairs_intact(&r.messages.to_vec());
        assert!(r.messages.len() <= 3);
    }
    assert_eq!(stores.messages.count("c-window").await.unwrap(), 8);
}

#[tokio::test]
async fn the_message_window_never_drops_the_turns_own_tool_results() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("ans0"))
        .respond(call("lookup", &["a"]))
        .respond(call("lookup", &["b"]))
        .respond(call("lookup", &["c"]))
        .respond(LlmResponse::text("ans1"));
    let agent = builder("c-window-turn", &llm, &stores)
        .tools(TestTools::default())
        .window(WindowConfig::max_messages(3))
        .build()
        .unwrap();
    turn(&agent, "u0").await;
    turn(&agent, "u1").await;
    let requests = llm.requests();
    // The earlier turn makes room for the turn's messages...
    assert_eq!(texts(&requests[1].messages), vec!["u0", "ans0", "u1"]);
    assert_eq!(
        texts(&requests[2].messages),
        vec!["u1", "call a", "result of a"]
    );
    // ...but the turn's own results stay as it grows past three messages.
    assert_eq!(
        texts(&requests[4].messages),
        vec![
            "u1",
            "call a",
            "result of a",
            "call b",
            "result of b",
            "call c",
            "result of c"
        ]
    );
}

/// Checkpoints as the loop saves them, the last one kept even once deleted.
#[derive(Default)]
struct LastSaved(std::sync::Mutex<Option<looopy_core::store::TaskCheckpoint>>);

#[async_trait::async_trait]
impl looopy_core::store::CheckpointStore for LastSaved {
    async fn save(
        &self,
        checkpoint: &looopy_core::store::TaskCheckpoint,
    ) -> Result<(), looopy_core::StoreError> {
        *self.0.lock().unwrap() = Some(checkpoint.clone());
        Ok(())
    }
    async fn load(
        &self,
        _: &str,
    ) -> Result<Option<looopy_core::store::TaskCheckpoint>, looopy_core::StoreError> {
        Ok(self.0.lock().unwrap().clone())
    }
    async fn delete(&self, _: &str) -> Result<(), looopy_core::StoreError> {
        Ok(())
    }
}

#[tokio::test]
async fn the_window_is_applied_once_by_the_model_layer_and_the_turn_keeps_the_whole_history() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("a1"))
        .respond(LlmResponse::text("a2"))
        .respond(LlmResponse::text("a3"));
    // The Agent deletes an ended turn's checkpoint: keep the last one saved.
    let saved = Arc::new(LastSaved::default());
    let agent = builder("c-once", &llm, &stores)
        .task_store(saved.clone())
        .window(WindowConfig::max_messages(2))
        .build()
        .unwrap();
    turn(&agent, "u1").await;
    turn(&agent, "u2").await;
    let (_, summary) = turn(&agent, "u3").await;
    // The model saw the window...
    assert_eq!(texts(&llm.requests()[2].messages), vec!["a2", "u3"]);
    // ...while the turn worked on the whole history: it was not cut before
    // the turn and again by the model layer.
    let checkpoint = saved.0.lock().unwrap().clone().unwrap();
    assert_eq!(*checkpoint.task_id, *summary.task_id);
    assert_eq!(
        checkpoint.messages.len(),
        6,
        "{:?}",
        texts(&checkpoint.messages)
    );
    assert_eq!(checkpoint.turn_start, 5);
}

#[tokio::test]
async fn a_token_window_applies_too() {
    let stores = looopy_stores_memory::stores();
    let big = "x".repeat(4000);
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text(big.clone()))
        .respond(LlmResponse::text("short"));
    let agent = builder("c-window-tokens", &llm, &stores)
        .window(WindowConfig::max_tokens(200))
        .build()
        .unwrap();
    turn(&agent, "u1").await;
    turn(&agent, "u2").await;
    let second = texts(&llm.requests()[1].messages);
    assert_eq!(second, vec!["u2"], "the 1000-token answer does not fit");
}

#[tokio::test]
async fn with_a_prebuilt_loop_the_window_applies_at_the_start_of_each_turn() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("a1"))
        .respond(LlmResponse::text("a2"))
        .respond(LlmResponse::text("a3"));
    let agent_loop = AgentLoop::builder(llm.clone()).build();
    let agent = Agent::builder("c-window-prebuilt")
        .agent_loop(agent_loop)
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .window(WindowConfig::max_messages(2))
        .build()
        .unwrap();
    turn(&agent, "u1").await;
    turn(&agent, "u2").await;
    turn(&agent, "u3").await;
    assert_eq!(texts(&llm.requests()[2].messages), vec!["a2", "u3"]);
    assert_eq!(agent.messages().await.unwrap().len(), 6);
}

#[tokio::test]
async fn windowed_llm_wraps_any_provider() {
    use looopy_core::{LlmProvider, LlmRequest, TurnContext};
    let llm = ScriptedLlm::new().respond(LlmResponse::text("ok"));
    let windowed = WindowedLlm::new(Arc::new(llm.clone()), WindowConfig::max_messages(1));
    let request = LlmRequest {
        messages: vec![Message::user("old"), Message::user("new")].into(),
        ..Default::default()
    };
    windowed
        .call(request, &TurnContext::new("t", "c"))
        .await
        .unwrap();
    assert_eq!(texts(&llm.requests()[0].messages), vec!["new"]);
    assert_eq!(windowed.model_name(), "scripted");
}
