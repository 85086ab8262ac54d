//! The layers around the model and the tools: the defaults a loop built from
//! just a model and tools gets, turning them off, and the order of custom
//! layers.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use looopy_core::{
    AgentEvent, EventPayload, History, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream,
    Message, TaskState, ToolCall, ToolDefinition, ToolError, ToolFailure, ToolProvider, ToolResult,
    TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_loop::layers::RetryPolicy;
use looopy_testkit::ScriptedLlm;
use support::*;

fn user(text: &str) -> History {
    History::from(vec![Message::user(text)])
}

fn cx() -> TurnContext {
    TurnContext::new("t", "ctx")
}

fn unavailable() -> LlmError {
    LlmError::Server {
        retry_after: None,
        status: 503,
        message: "upstream down".into(),
    }
}

/// The results of the tool calls of a turn.
fn tool_results(events: &[AgentEvent]) -> Vec<ToolResult> {
    events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ToolComplete { result, .. } => Some(result.clone()),
            _ => None,
        })
        .collect()
}

/// A tool that never answers.
fn hanging_tool() -> FnTools {
    FnTools::new().tool("hang", |call, _| async move {
        std::future::pending::<()>().await;
        ToolResult::text(&call.id, "never")
    })
}

fn call_hang() -> LlmResponse {
    LlmResponse::tool_calls("", vec![ToolCall::new("h1", "hang", "{}")])
}

/// A model answer that calls `slow` once.
fn call_slow() -> LlmResponse {
    LlmResponse::tool_calls("", vec![ToolCall::new("s1", "slow", "{}")])
}

/// A model that fails once with a 503, then answers `text`.
fn down_then(text: &str) -> ScriptedLlm {
    ScriptedLlm::new()
        .fail(unavailable())
        .respond(LlmResponse::text(text))
}

/// Runs a turn on the user message `text` to its end; its events.
async fn run(agent: &AgentLoop, text: &str) -> Vec<AgentEvent> {
    drain(agent.start_turn(user(text), cx())).await
}

#[tokio::test(start_paused = true)]
async fn a_loop_from_a_model_retries_a_503_then_answers() {
    let llm = down_then("back");
    let agent = AgentLoop::builder(llm.clone())
        .tools(FnTools::new().echo("t", std::time::Duration::ZERO))
        .build();
    let events = run(&agent, "hi").await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(llm.request_count(), 2, "the 503 was tried again");
    assert!(
        !events
            .iter()
            .any(|e| matches!(&*e.payload, EventPayload::LlmError { .. })),
        "a retried failure is no turn error"
    );
}

#[tokio::test(start_paused = true)]
async fn a_loop_from_a_model_and_tools_times_out_a_tool_that_never_answers() {
    let llm = ScriptedLlm::new()
        .respond(call_hang())
        .respond(LlmResponse::text("gave up on it"));
    let agent = AgentLoop::builder(llm).tools(hanging_tool()).build();
    let events = run(&agent, "hang").await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    let results = tool_results(&events);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].failure, Some(ToolFailure::Timeout));
    assert!(results[0].is_error);
}

#[tokio::test(start_paused = true)]
async fn the_configured_tool_timeout_replaces_the_default() {
    let llm = ScriptedLlm::new()
        .respond(call_slow())
        .respond(LlmResponse::text("done"));
    // 40 s is past the default 30 s but within the configured minute.
    let tools = FnTools::new().echo("slow", std::time::Duration::from_secs(40));
    let agent = AgentLoop::builder(llm)
        .tools(tools)
        .tool_timeout(Some(std::time::Duration::from_secs(60)))
        .build();
    let events = run(&agent, "slow").await;
    let results = tool_results(&events);
    assert_eq!(results[0].failure, None);
    assert_eq!(results[0].text_content(), "slow:{}");
}

#[tokio::test(start_paused = true)]
async fn without_default_layers_a_503_fails_the_turn() {
    let llm = down_then("back");
    let agent = AgentLoop::builder(llm.clone())
        .without_default_layers()
        .build();
    let events = run(&agent, "hi").await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert_eq!(llm.request_count(), 1, "no retry");
    assert!(
        final_meta(&events)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("upstream down")
    );
}

#[tokio::test(start_paused = true)]
async fn retry_none_fails_the_turn_on_the_first_503() {
    let llm = down_then("back");
    let agent = AgentLoop::builder(llm.clone())
        .retry(RetryPolicy::none())
        .build();
    let events = run(&agent, "hi").await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert_eq!(llm.request_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn without_default_layers_a_tool_runs_past_30_s() {
    let llm = ScriptedLlm::new()
        .respond(call_slow())
        .respond(LlmResponse::text("done"));
    let tools = FnTools::new().echo("slow", std::time::Duration::from_secs(3600));
    let agent = AgentLoop::builder(llm)
        .tools(tools)
        .without_default_layers()
        .build();
    let events = run(&agent, "slow").await;
    let results = tool_results(&events);
    assert_eq!(
        results[0].failure, None,
        "no timeout: the hour-long call ran"
    );
    assert_eq!(results[0].text_content(), "slow:{}");
}

#[tokio::test(start_paused = true)]
async fn tool_timeout_none_keeps_the_retry() {
    let llm = ScriptedLlm::new()
        .fail(unavailable())
        .respond(call_slow())
        .respond(LlmResponse::text("done"));
    let tools = FnTools::new().echo("slow", std::time::Duration::from_secs(3600));
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .tool_timeout(None)
        .build();
    let events = run(&agent, "slow").await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(llm.request_count(), 3);
    assert_eq!(tool_results(&events)[0].failure, None);
}

/// Records the calls that pass through it, under its name, into a shared log.
struct Recorded<P: ?Sized> {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    inner: Arc<P>,
}

impl<P: ?Sized> Recorded<P> {
    fn note(&self, what: String) {
        self.log.lock().unwrap().push(what);
    }
}

#[async_trait]
impl LlmProvider for Recorded<dyn LlmProvider> {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        self.note(format!("{} in", self.name));
        let out = self.inner.call(request, cx).await;
        self.note(format!("{} out ok={}", self.name, out.is_ok()));
        out
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        self.note(format!("{} stream", self.name));
        self.inner.stream(request, cx)
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
}

#[async_trait]
impl ToolProvider for Recorded<dyn ToolProvider> {
    async fn tools(&self, cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        self.inner.tools(cx).await
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        self.note(format!("{} in", self.name));
        let result = self.inner.execute(call, cx).await;
        self.note(format!("{} out failure={:?}", self.name, result.failure));
        result
    }
}

fn llm_recorder(
    name: &'static str,
    log: &Arc<Mutex<Vec<String>>>,
) -> impl Fn(Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> + Send + Sync + 'static {
    let log = log.clone();
    move |inner| {
        Arc::new(Recorded {
            name,
            log: log.clone(),
            inner,
        })
    }
}

fn tool_recorder(
    name: &'static str,
    log: &Arc<Mutex<Vec<String>>>,
) -> impl Fn(Arc<dyn ToolProvider>) -> Arc<dyn ToolProvider> + Send + Sync + 'static {
    let log = log.clone();
    move |inner| {
        Arc::new(Recorded {
            name,
            log: log.clone(),
            inner,
        })
    }
}

#[tokio::test(start_paused = true)]
async fn custom_layers_wrap_the_defaults_the_first_added_outermost() {
    let log = Arc::new(Mutex::new(Vec::new()));
    // The model fails once with a 503: the retry, inside the custom layers,
    // hides it from them.
    let llm = ScriptedLlm::new()
        .fail(unavailable())
        .respond(call_hang())
        .respond(LlmResponse::text("done"));
    let agent = AgentLoop::builder(llm.clone())
        .stream(false)
        .tools(hanging_tool())
        .llm_layer(llm_recorder("outer", &log))
        .llm_layer(llm_recorder("inner", &log))
        .tool_layer(tool_recorder("tool-outer", &log))
        .tool_layer(tool_recorder("tool-inner", &log))
        .build();
    let events = run(&agent, "go").await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(llm.request_count(), 3);
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            // The first model request: two attempts below the custom layers.
            "outer in",
            "inner in",
            "inner out ok=true",
            "outer out ok=true",
            // The tool call: the timeout is inside both tool layers, so both
            // see its result.
            "tool-outer in",
            "tool-inner in",
            "tool-inner out failure=Some(Timeout)",
            "tool-outer out failure=Some(Timeout)",
            // The second model request.
            "outer in",
            "inner in",
            "inner out ok=true",
            "outer out ok=true",
        ]
    );
}

#[tokio::test]
async fn layer_llm_applies_the_loops_model_layers_to_another_model() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = AgentLoop::builder(ScriptedLlm::new())
        .llm_layer(llm_recorder("outer", &log))
        .build();
    let other = down_then("summary");
    let layered = agent.layer_llm(Arc::new(other.clone()));
    tokio::time::pause();
    let response = layered
        .call(
            LlmRequest {
                messages: user("sum up"),
                ..LlmRequest::default()
            },
            &cx(),
        )
        .await
        .unwrap();
    assert_eq!(response.message.text(), "summary");
    assert_eq!(other.request_count(), 2, "retried like the loop's model");
    assert_eq!(
        *log.lock().unwrap(),
        vec!["outer in".to_owned(), "outer out ok=true".to_owned()]
    );
}
