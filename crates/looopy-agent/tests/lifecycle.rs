//! Lifecycle, multi-turn history, pause/resume across Agents, auto-save.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_agent::{Agent, AgentError, LifecycleState, TurnEnd};
use looopy_core::StoreError;
use looopy_core::store::{AgentState, AgentStateStore, MessageStore};
use looopy_core::{LlmResponse, Message, Role, TaskState};
use looopy_testkit::ScriptedLlm;
use support::*;

#[tokio::test]
async fn history_grows_over_turns_and_the_model_sees_earlier_turns() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("It is sunny."))
        .respond(LlmResponse::text("You asked about the weather."));
    let agent = builder("c1", &llm, &stores)
        .system_prompt("Be brief.")
        .build()
        .unwrap();
    assert_eq!(agent.lifecycle(), LifecycleState::Created);
    agent.start().await.unwrap();
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);

    let t = agent
        .execute_turn(Some(Message::user("What's the weather?")), None)
        .await
        .unwrap();
    assert_eq!(agent.lifecycle(), LifecycleState::Busy);
    assert_eq!(t.turn_number(), 1);
    let (events, summary) = t.collect_all().await;
    let summary = summary.unwrap();
    assert_eq!(summary.state, TaskState::Completed);
    assert_eq!(summary.end, TurnEnd::Finished);
    assert_eq!(summary.new_messages.len(), 2);
    assert!(summary.saved);
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
    let meta = final_metadata(&events);
    assert_eq!(meta["turnNumber"], 1);
    assert_eq!(meta["saved"], true);
    assert_eq!(meta["finishReason"], "finished");

    let (_, summary) = turn(&agent, "What did I ask?").await;
    assert_eq!(summary.turn_number, 2);

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let second: Vec<String> = requests[1].messages.iter().map(Message::text).collect();
    assert_eq!(
        second,
        vec!["What's the weather?", "It is sunny.", "What did I ask?"]
    );
    assert_eq!(requests[1].system_prompt.as_deref(), Some("Be brief."));
    let stored = stores.messages.load("c1").await.unwrap();
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[3].text(), "You asked about the weather.");
    assert_eq!(agent.messages().await.unwrap(), stored);
    assert_eq!(agent.last_messages(2).await.unwrap(), stored[2..].to_vec());
    assert_eq!(
        agent.messages_in(1..3).await.unwrap(),
        stored[1..3].to_vec()
    );
    assert_eq!(agent.turn_count(), 2);
    let state = stores.agents.load("c1").await.unwrap().unwrap();
    assert_eq!(state.turn_count, 2);
    assert_eq!(state.lifecycle, LifecycleState::Ready);
    assert_eq!(state.last_turn.as_ref().unwrap().turn_number, 2);
    assert_eq!(
        state.last_turn.as_ref().unwrap().state,
        TaskState::Completed
    );
}

#[tokio::test]
async fn pause_then_a_new_agent_resumes_with_full_history_and_turn_count() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("a1"))
        .respond(LlmResponse::text("a2"));
    let first = builder("c-resume", &llm, &stores).build().unwrap();
    first.start().await.unwrap();
    turn(&first, "u1").await;
    turn(&first, "u2").await;
    first.pause().await.unwrap();
    assert_eq!(first.lifecycle(), LifecycleState::Paused);
    let saved = stores.agents.load("c-resume").await.unwrap().unwrap();
    assert_eq!(saved.lifecycle, LifecycleState::Paused);
    assert_eq!(saved.turn_count, 2);
    let created_at = saved.created_at;
    drop(first);

    // A new Agent (a new process, say) for the same context.
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("a3"));
    let second = builder("c-resume", &llm2, &stores).build().unwrap();
    assert_eq!(second.turn_count(), 0, "nothing loaded before start");
    second.start().await.unwrap();
    assert_eq!(second.turn_count(), 2);
    assert_eq!(second.state().created_at, created_at);
    assert_eq!(second.messages().await.unwrap().len(), 4);
    let (_, summary) = turn(&second, "u3").await;
    assert_eq!(summary.turn_number, 3);
    let texts: Vec<String> = llm2.requests()[0]
        .messages
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, vec!["u1", "a1", "u2", "a2", "u3"]);
    let saved = stores.agents.load("c-resume").await.unwrap().unwrap();
    assert_eq!(saved.turn_count, 3);
    assert_eq!(saved.lifecycle, LifecycleState::Ready);
}

#[tokio::test]
async fn the_first_turn_starts_the_agent_and_a_paused_agent_continues() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("one"))
        .respond(LlmResponse::text("two"));
    let agent = builder("c-lazy", &llm, &stores).build().unwrap();
    turn(&agent, "hi").await;
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
    agent.pause().await.unwrap();
    let (_, s) = turn(&agent, "again").await;
    assert_eq!(s.turn_number, 2);
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
}

#[tokio::test]
async fn shutdown_refuses_turns_until_started_again() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("one"))
        .respond(LlmResponse::text("two"));
    let agent = builder("c-down", &llm, &stores).build().unwrap();
    turn(&agent, "hi").await;
    agent.shutdown().await.unwrap();
    agent.shutdown().await.unwrap();
    assert_eq!(agent.lifecycle(), LifecycleState::Shutdown);
    let e = agent
        .execute_turn(Some(Message::user("x")), None)
        .await
        .unwrap_err();
    assert!(matches!(e, AgentError::ShutDown { .. }), "{e:?}");
    assert_eq!(stores.messages.count("c-down").await.unwrap(), 2);
    assert_eq!(
        stores
            .agents
            .load("c-down")
            .await
            .unwrap()
            .unwrap()
            .lifecycle,
        LifecycleState::Shutdown
    );
    agent.start().await.unwrap();
    let (_, s) = turn(&agent, "back").await;
    assert_eq!(s.turn_number, 2);
}

#[tokio::test]
async fn a_failing_start_marks_the_agent_failed_and_a_later_start_recovers() {
    let stores = looopy_stores_memory::stores();
    let flaky = Arc::new(FlakyMessages::default());
    flaky.down.store(true, std::sync::atomic::Ordering::SeqCst);
    let llm = ScriptedLlm::new().respond(LlmResponse::text("ok"));
    let agent = Agent::builder("c-fail")
        .llm(llm.clone())
        .message_store(flaky.clone())
        .artifact_store(stores.artifacts.clone())
        .build()
        .unwrap();
    let e = agent.start().await.unwrap_err();
    assert!(matches!(e, AgentError::Store(_)), "{e:?}");
    assert_eq!(agent.lifecycle(), LifecycleState::Failed);
    assert!(agent.last_error().unwrap().contains("down"));
    let e = agent
        .execute_turn(Some(Message::user("x")), None)
        .await
        .unwrap_err();
    assert!(matches!(e, AgentError::Store(_)));
    flaky.down.store(false, std::sync::atomic::Ordering::SeqCst);
    let (_, s) = turn(&agent, "x").await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
    assert_eq!(agent.last_error(), None);
}

#[tokio::test]
async fn auto_save_off_keeps_everything_in_memory_until_save_state() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("a1"))
        .respond(LlmResponse::text("a2"));
    let agent = builder("c-manual", &llm, &stores)
        .auto_save(false)
        .build()
        .unwrap();
    agent.start().await.unwrap();
    let (_, s) = turn(&agent, "u1").await;
    assert!(!s.saved);
    let (_, _) = turn(&agent, "u2").await;
    assert_eq!(stores.messages.count("c-manual").await.unwrap(), 0);
    assert_eq!(agent.unsaved_count(), 4);
    // The second turn still saw the first.
    assert_eq!(llm.requests()[1].messages.len(), 3);
    assert_eq!(agent.messages().await.unwrap().len(), 4);
    assert_eq!(agent.messages_in(3..10).await.unwrap()[0].text(), "a2");
    agent.save_state().await.unwrap();
    assert_eq!(agent.unsaved_count(), 0);
    let stored = stores.messages.load("c-manual").await.unwrap();
    let texts: Vec<String> = stored.iter().map(Message::text).collect();
    assert_eq!(texts, vec!["u1", "a1", "u2", "a2"]);
    assert_eq!(
        stores
            .agents
            .load("c-manual")
            .await
            .unwrap()
            .unwrap()
            .turn_count,
        2
    );
}

#[tokio::test]
async fn a_failed_save_keeps_messages_in_memory_and_the_next_turn_writes_them() {
    let stores = looopy_stores_memory::stores();
    let flaky = Arc::new(FlakyMessages::default());
    // Append 1 saves the user message, append 2 (the answer) fails.
    flaky
        .fail_append_no
        .store(2, std::sync::atomic::Ordering::SeqCst);
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("a1"))
        .respond(LlmResponse::text("a2"));
    let agent = Agent::builder("c-flaky")
        .llm(llm.clone())
        .message_store(flaky.clone())
        .artifact_store(stores.artifacts.clone())
        .build()
        .unwrap();
    let (events, s) = turn(&agent, "u1").await;
    assert!(!s.saved);
    assert!(s.save_error.as_deref().unwrap().contains("refused"));
    assert!(final_metadata(&events).contains_key("saveError"));
    assert_eq!(flaky.count("c-flaky").await.unwrap(), 1);
    assert_eq!(agent.unsaved_count(), 1);
    assert_eq!(agent.messages().await.unwrap().len(), 2);
    let (_, s) = turn(&agent, "u2").await;
    assert!(s.saved);
    let texts: Vec<String> = flaky
        .load("c-flaky")
        .await
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, vec!["u1", "a1", "u2", "a2"]);
}

#[tokio::test]
async fn clear_forgets_history_and_artifacts_but_not_the_turn_count() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("streamed answer"))
        .respond(LlmResponse::text("fresh"));
    let agent = builder("c-clear", &llm, &stores).build().unwrap();
    turn(&agent, "hi").await;
    assert!(!agent.artifacts().await.unwrap().is_empty());
    agent.clear().await.unwrap();
    assert!(agent.messages().await.unwrap().is_empty());
    assert!(agent.artifacts().await.unwrap().is_empty());
    assert_eq!(agent.turn_count(), 1);
    let (_, s) = turn(&agent, "new start").await;
    assert_eq!(llm.requests()[1].messages.len(), 1);
    assert_eq!(s.turn_number, 2);
}

#[tokio::test]
async fn max_iterations_ends_the_turn_completed_with_the_reason() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["a"]))
        .respond(LlmResponse::text("Partial result."));
    let agent = builder("c-max", &llm, &stores)
        .tools(TestTools::default())
        .max_iterations(1)
        .build()
        .unwrap();
    let (events, s) = turn(&agent, "loop forever").await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(s.end, TurnEnd::MaxIterations);
    let meta = final_metadata(&events);
    assert_eq!(meta["finishReason"], "max_iterations");
    let stored = stores.messages.load("c-max").await.unwrap();
    let roles: Vec<Role> = stored.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(stored[3].text(), "Partial result.");
    assert_tool_pairs_intact(&stored);
}

#[tokio::test]
async fn the_builder_refuses_incomplete_or_contradictory_settings() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new();
    let e = Agent::builder("c")
        .llm(llm.clone())
        .artifact_store(stores.artifacts.clone())
        .build()
        .unwrap_err();
    assert!(matches!(e, AgentError::Config(_)));
    let e = Agent::builder("c")
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .build()
        .unwrap_err();
    assert!(matches!(e, AgentError::Config(_)));
    let agent_loop = looopy_agent::AgentLoop::builder(llm.clone()).build();
    let e = Agent::builder("c")
        .agent_loop(agent_loop.clone())
        .tools(TestTools::default())
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .build()
        .unwrap_err();
    assert!(matches!(e, AgentError::Config(_)));
    let ok = Agent::builder("c")
        .agent_loop(agent_loop)
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .build();
    assert!(ok.is_ok());
}

#[tokio::test]
async fn an_empty_conversation_without_a_message_is_refused() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new();
    let agent = builder("c-empty", &llm, &stores).build().unwrap();
    let e = agent.execute_turn(None, None).await.unwrap_err();
    assert_eq!(e, AgentError::EmptyTurn);
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
    assert_eq!(llm.request_count(), 0);
}

#[tokio::test]
async fn a_turn_paused_from_its_agent_turn_waits_and_goes_on_when_resumed() {
    use futures::StreamExt;
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(LlmResponse::text("after the pause"));
    let agent = builder("paused", &llm, &stores).build().unwrap();
    let mut t = agent
        .execute_turn(Some(Message::user("go")), None)
        .await
        .unwrap();
    // Asked before the loop has started: it holds the first model call.
    t.pause("operator");
    assert!(t.is_paused());
    until(&mut t, |e| e.kind() == "internal:execution-paused").await;
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(100), t.next()).await;
    assert!(quiet.is_err(), "an event arrived while paused: {quiet:?}");
    assert_eq!(llm.request_count(), 0);
    assert_eq!(agent.lifecycle(), LifecycleState::Busy);

    t.resume();
    assert!(!t.is_paused());
    let (events, summary) = t.collect_all().await;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind()).collect();
    let resumed = kinds
        .iter()
        .position(|k| *k == "internal:execution-resumed")
        .unwrap();
    let call = kinds
        .iter()
        .position(|k| *k == "internal:llm-call")
        .unwrap();
    assert!(resumed < call, "{kinds:?}");
    assert_eq!(summary.unwrap().state, TaskState::Completed);
    assert_eq!(llm.request_count(), 1);
}

/// A state store whose first `load` is held until the test lets it return,
/// to end a turn elsewhere between an Agent's load and the rest of its start.
struct HeldLoad {
    inner: Arc<dyn AgentStateStore>,
    loaded: tokio::sync::Notify,
    release: tokio::sync::Notify,
    held: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl AgentStateStore for HeldLoad {
    async fn save(&self, state: &AgentState) -> Result<(), StoreError> {
        self.inner.save(state).await
    }
    async fn load(&self, context_id: &str) -> Result<Option<AgentState>, StoreError> {
        let state = self.inner.load(context_id).await;
        if !self.held.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.loaded.notify_one();
            self.release.notified().await;
        }
        state
    }
    async fn delete(&self, context_id: &str) -> Result<(), StoreError> {
        self.inner.delete(context_id).await
    }
    async fn list_by_owner(
        &self,
        owner: &str,
        limit: usize,
    ) -> Result<Vec<AgentState>, StoreError> {
        self.inner.list_by_owner(owner, limit).await
    }
}

#[tokio::test]
async fn starting_does_not_write_back_a_state_another_agent_moved_on() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("a1"))
        .respond(LlmResponse::text("a2"));
    let first = builder("c-race", &llm, &stores).build().unwrap();
    turn(&first, "u1").await;

    // A second Agent of the conversation loads the state (one turn) ...
    let held = Arc::new(HeldLoad {
        inner: stores.agents.clone(),
        loaded: tokio::sync::Notify::new(),
        release: tokio::sync::Notify::new(),
        held: std::sync::atomic::AtomicBool::new(false),
    });
    let late = builder("c-race", &ScriptedLlm::new(), &stores)
        .state_store(held.clone())
        .build()
        .unwrap();
    let starting = tokio::spawn(async move {
        late.start().await.unwrap();
        late
    });
    held.loaded.notified().await;
    // ... while the first ends a second turn.
    turn(&first, "u2").await;
    held.release.notify_one();
    let late = starting.await.unwrap();

    let saved = stores.agents.load("c-race").await.unwrap().unwrap();
    assert_eq!(saved.turn_count, 2, "the second turn's count was undone");
    assert_eq!(late.lifecycle(), LifecycleState::Ready);
}
