//! Shared helpers of the agent tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use looopy_agent::{Agent, AgentBuilder, AgentTurn, FinishedTurn, TurnOptions};
use looopy_core::store::MessageStore;
use looopy_core::store::Stores;
use looopy_core::{
    AgentEvent, EventPayload, LlmResponse, Message, Part, Role, StoreError, ToolCall,
    ToolDefinition, ToolError, ToolProvider, ToolResult, ToolSignal, TurnContext,
};
use looopy_stores_memory::MemoryMessageStore;
use looopy_testkit::ScriptedLlm;
use serde_json::json;

/// An agent on the given stores (messages, artifacts, agent state).
pub fn builder(context: &str, llm: &ScriptedLlm, stores: &Stores) -> AgentBuilder {
    Agent::builder(context)
        .llm(llm.clone())
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .state_store(stores.agents.clone())
}

/// Every store in the test Redis (`LOOOPY_TEST_REDIS_URL`), under `prefix`.
pub async fn redis_stores(prefix: &str) -> Stores {
    let redis = looopy_testkit::test_redis().expect("a test Redis (LOOOPY_TEST_REDIS_URL)");
    let config =
        looopy_stores_redis::RedisConfig::new(redis.url()).with_key_prefix(prefix.to_owned());
    looopy_stores_redis::connect(config).await.unwrap()
}

/// An agent with the [`TestTools`] on every store of `stores` (the turn
/// lease and checkpoints too), through their turn store when `combined`.
pub fn every_store(
    context: &str,
    llm: &ScriptedLlm,
    stores: &Stores,
    combined: bool,
) -> AgentBuilder {
    let b = builder(context, llm, stores)
        .tools(TestTools::default())
        .turn_lock(stores.locks.clone())
        .task_store(stores.checkpoints.clone());
    if combined {
        let turns = stores.turns.clone();
        return b.turn_store(turns.expect("the stores have a turn store"));
    }
    b
}

/// An agent with the [`TestTools`] on the given stores.
pub fn tool_agent(context: &str, llm: &ScriptedLlm, stores: &Stores) -> Agent {
    builder(context, llm, stores)
        .tools(TestTools::default())
        .build()
        .unwrap()
}

/// A model that calls `lookup` once (call id `l1`), then answers "all done".
pub fn lookup_then_done() -> ScriptedLlm {
    ScriptedLlm::new()
        .respond(call("lookup", &["l1"]))
        .respond(LlmResponse::text("all done"))
}

/// A model answer calling `name` once per id.
pub fn call(name: &str, ids: &[&str]) -> LlmResponse {
    LlmResponse::tool_calls(
        "",
        ids.iter()
            .map(|id| ToolCall::new(*id, name, r#"{"q":"x"}"#))
            .collect(),
    )
}

/// Runs a turn with a user message to its end.
pub async fn turn(agent: &Agent, text: &str) -> (Vec<AgentEvent>, FinishedTurn) {
    let t = agent
        .execute_turn(Some(Message::user(text)), None)
        .await
        .unwrap();
    let (events, summary) = t.collect_all().await;
    (events, summary.unwrap())
}

/// Starts a turn with a user message and per-turn options.
pub async fn start_turn(agent: &Agent, text: &str, options: TurnOptions) -> AgentTurn {
    agent
        .execute_turn_with(Some(Message::user(text)), options)
        .await
        .unwrap()
}

/// Runs a turn on `message` to its end.
pub async fn send(agent: &Agent, message: Message) -> FinishedTurn {
    agent
        .execute_turn(Some(message), None)
        .await
        .unwrap()
        .finish()
        .await
        .unwrap()
}

/// A user message that answers the client tool call `call_id` with `result`.
pub fn client_answer(call_id: &str, result: serde_json::Value) -> Message {
    Message::with_parts(
        Role::User,
        vec![Part::data(json!({"toolCallId": call_id, "result": result}))],
    )
}

/// The roles of `messages`, in order.
pub fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

/// Asserts what a turn cancelled in its one tool call saved in `context`:
/// the user message, the call and its error result, and a cancelled last turn.
pub async fn assert_saved_cancelled_in_tool(stores: &Stores, context: &str) {
    let stored = stores.messages.load(context).await.unwrap();
    assert_eq!(
        roles(&stored),
        vec![Role::User, Role::Assistant, Role::Tool]
    );
    assert!(stored[2].is_error());
    let state = stores.agents.load(context).await.unwrap().unwrap();
    assert_eq!(
        state.last_turn.as_ref().unwrap().state,
        looopy_core::TaskState::Canceled
    );
}

/// Asserts what [`lookup_then_done`] saved in `context` when its turn ran to
/// its end: the user message, the call, its result and the answer.
pub async fn assert_saved_lookup_then_done(stores: &Stores, context: &str) {
    let stored = stores.messages.load(context).await.unwrap();
    assert_eq!(
        roles(&stored),
        vec![Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(stored[3].text(), "all done");
}

/// Reads events until one matches; returns it.
pub async fn until(turn: &mut AgentTurn, pred: impl Fn(&AgentEvent) -> bool) -> AgentEvent {
    use futures::StreamExt;
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), turn.next())
            .await
            .expect("event in time")
            .expect("stream ended before the expected event");
        if pred(&e) {
            return e;
        }
    }
}

/// Waits (politely) until the agent takes turns again.
pub async fn wait_ready(agent: &Agent) {
    for _ in 0..3000 {
        if agent.lifecycle() == looopy_agent::LifecycleState::Ready {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("agent never became ready");
}

pub fn is_tool_start(e: &AgentEvent) -> bool {
    matches!(*e.payload, EventPayload::ToolStart { .. })
}

#[allow(unused_imports)] // not every test binary needs them
pub use looopy_testkit::events::final_metadata;

/// Asserts every tool message answers a call made earlier in `messages`,
/// and every call (but those of the last message) has a result.
pub fn assert_tool_pairs_intact(messages: &[Message]) {
    let mut called = HashSet::new();
    let mut answered = HashSet::new();
    for m in messages {
        for c in &m.tool_calls {
            called.insert(c.id.clone());
        }
        if m.role == Role::Tool {
            let id = m.tool_call_id.clone().unwrap();
            assert!(
                called.contains(&id),
                "result {id} without its call: {messages:#?}"
            );
            answered.insert(id);
        }
    }
    for id in called {
        assert!(answered.contains(&id), "call {id} without a result");
    }
}

/// What a tool saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub call_id: String,
    pub principal: Option<String>,
    pub credentials: Option<String>,
    pub task_id: String,
    pub turn_number: Option<u64>,
}

/// Tools for the tests:
/// - `lookup` answers `result of <id>` at once;
/// - `slow` waits until the turn is cancelled (or for an hour);
/// - `client` is a client tool: it asks the client (input required);
/// - `chart` makes an artifact.
#[derive(Clone, Default)]
pub struct TestTools {
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl TestTools {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl ToolProvider for TestTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(["lookup", "slow", "client", "chart"]
            .into_iter()
            .map(|n| ToolDefinition::without_parameters(n, n))
            .collect())
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        self.seen.lock().unwrap().push(Seen {
            call_id: call.id.clone(),
            principal: cx.auth.as_ref().map(|a| a.principal.clone()),
            credentials: cx.auth.as_ref().and_then(|a| a.credentials.clone()),
            task_id: cx.task_id.to_string(),
            turn_number: cx.turn_number,
        });
        match call.name.as_str() {
            "slow" => {
                tokio::select! {
                    _ = cx.cancel.cancelled() => ToolResult::error(&call.id, "cancelled"),
                    _ = tokio::time::sleep(Duration::from_secs(3600)) => ToolResult::text(&call.id, "slow done"),
                }
            }
            "client" => ToolResult {
                content: vec![Part::data(json!({
                    "toolCallId": call.id, "name": call.name, "arguments": call.parsed_arguments()
                }))],
                ..ToolResult::text(&call.id, "")
            }
            .with_signal(ToolSignal::InputRequired)
            .with_source(looopy_core::ResultSource::Client),
            "chart" => ToolResult::text(&call.id, "chart made").with_artifact(
                looopy_core::Artifact::new(
                    format!("chart-{}", call.id),
                    vec![Part::text("<svg/>")],
                )
                .with_name("chart"),
            ),
            _ => ToolResult::text(&call.id, format!("result of {}", call.id)),
        }
    }
}

/// A message store that fails on demand.
#[derive(Default)]
pub struct FlakyMessages {
    pub inner: MemoryMessageStore,
    /// Fail every operation.
    pub down: AtomicBool,
    /// Fail the append with this 1-based number (0: none).
    pub fail_append_no: AtomicUsize,
    appends: AtomicUsize,
}

impl FlakyMessages {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable {
                message: "down".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl MessageStore for FlakyMessages {
    async fn append(&self, context_id: &str, messages: &[Message]) -> Result<(), StoreError> {
        self.check()?;
        let n = self.appends.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_append_no.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable {
                message: format!("append #{n} refused"),
            });
        }
        self.inner.append(context_id, messages).await
    }
    async fn load_range(
        &self,
        context_id: &str,
        range: Range<usize>,
    ) -> Result<Vec<Message>, StoreError> {
        self.check()?;
        self.inner.load_range(context_id, range).await
    }
    async fn count(&self, context_id: &str) -> Result<usize, StoreError> {
        self.check()?;
        self.inner.count(context_id).await
    }
    async fn replace_range(
        &self,
        context_id: &str,
        range: Range<usize>,
        replacement: &[Message],
    ) -> Result<(), StoreError> {
        self.check()?;
        self.inner
            .replace_range(context_id, range, replacement)
            .await
    }
    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        self.check()?;
        self.inner.clear(context_id).await
    }
}
