#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
//! Layout: `config` holds the settings, `turn` decides termination,
//! `iteration` makes one model call, `tools` routes and runs tool calls,
//! `checkpoint` persists and derives what resume must do, `events` builds
//! every event and `queue` holds them until the stream hands them out,
//! `hooks` and `pause` are the extension points, `layers` wraps the model
//! and the tool providers (retry, timeouts, custom layers).

mod checkpoint;
mod config;
mod error;
mod events;
pub mod hooks;
mod iteration;
pub mod layers;
mod limits;
mod pause;
mod queue;
mod stream;
mod telemetry;
pub mod tool_output;
mod tools;
mod turn;
mod wrap_up;

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::TaskStateStore;
use looopy_core::{History, LlmProvider, TaskState, ToolProvider, TurnContext};

pub use config::AgentLoopConfig;
pub use error::LoopError;
pub use events::TurnEnd;
pub use limits::{ToolFailureMode, TurnSettings};
pub use stream::{TurnHandle, TurnOutcome, TurnStream};
pub use tools::ToolRegistry;

use crate::events::Emitter;
use crate::hooks::{Hook, HookFailureMode, Hooks};
use crate::layers::{LlmLayer, LlmStack, RetryPolicy, TimeoutLayer, ToolLayer, ToolStack};
use crate::queue::EventQueue;
use crate::stream::TurnShared;
use crate::telemetry::LoopMetrics;
use crate::turn::Turn;

/// The single-turn engine. Cheap to clone; one loop serves any number of
/// concurrent turns.
#[derive(Clone)]
pub struct AgentLoop {
    llm: Arc<dyn LlmProvider>,
    tools: Arc<[Arc<dyn ToolProvider>]>,
    task_store: Option<Arc<dyn TaskStateStore>>,
    config: Arc<AgentLoopConfig>,
    hooks: Hooks,
    metrics: LoopMetrics,
    llm_stack: LlmStack,
}

impl AgentLoop {
    /// Starts building a loop around a model.
    pub fn builder(llm: impl LlmProvider + 'static) -> AgentLoopBuilder {
        AgentLoopBuilder::new(Arc::new(llm))
    }

    /// The settings.
    pub fn config(&self) -> &AgentLoopConfig {
        &self.config
    }

    /// The model, wrapped in the loop's model layers (see [`layers`]).
    pub fn llm(&self) -> &Arc<dyn LlmProvider> {
        &self.llm
    }

    /// Where the loop keeps its checkpoints, if anywhere.
    pub fn checkpoint_store(&self) -> Option<&Arc<dyn TaskStateStore>> {
        self.task_store.as_ref()
    }

    /// `model` wrapped in the same model layers as the loop's own (the
    /// retry policy and the custom [`llm_layer`](AgentLoopBuilder::llm_layer)s),
    /// for other calls that should behave alike, such as compaction
    /// summaries made with another model.
    pub fn layer_llm(&self, model: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        self.llm_stack.apply(model)
    }

    /// Shuts every tool provider of the loop down
    /// ([`ToolProvider::shutdown`]: MCP servers' child processes end, for
    /// instance). Each is asked even when another fails; the failures are
    /// logged and the first is returned. Providers start again on their
    /// next use.
    pub async fn shutdown_tools(&self) -> Result<(), looopy_core::ToolError> {
        let results = futures::future::join_all(self.tools.iter().map(|p| p.shutdown())).await;
        let mut first = None;
        for error in results.into_iter().filter_map(Result::err) {
            tracing::warn!(%error, "a tool provider did not shut down cleanly");
            first.get_or_insert(error);
        }
        first.map_or(Ok(()), Err)
    }

    fn channel(&self, cx: &TurnContext) -> (Emitter, Arc<EventQueue>) {
        let queue = Arc::new(EventQueue::default());
        (
            Emitter::new(queue.clone(), cx.task_id.clone(), cx.context_id.clone()),
            queue,
        )
    }

    /// Runs one turn over `messages` (the history the Agent loaded, ending
    /// with the new user message). The turn's task id, context, principal and
    /// cancellation come from `cx`; its agent id is this loop's.
    pub fn start_turn(&self, messages: History, cx: TurnContext) -> TurnStream {
        self.start_turn_with(messages, cx, TurnSettings::default())
    }

    /// [`start_turn`](Self::start_turn) with settings for this turn only
    /// (system prompt, limits, tool failure mode): each field set replaces
    /// the loop's value for this turn.
    pub fn start_turn_with(
        &self,
        messages: History,
        cx: TurnContext,
        settings: TurnSettings,
    ) -> TurnStream {
        let cx = cx.with_agent_id(self.config.agent_id.clone());
        let (emit, rx) = self.channel(&cx);
        let shared = Arc::new(TurnShared::default());
        let turn = Turn::start(
            self.clone(),
            cx,
            emit,
            shared.clone(),
            messages.clone(),
            settings,
        );
        TurnStream::new(Box::pin(turn.run(false)), rx, shared, messages)
    }

    /// [`start_turn_with`](Self::start_turn_with) that first runs the
    /// calls a person approved (see [`ApprovedCalls`]). `messages` ends with
    /// the assistant message that made them and the results of its other
    /// calls; the approval hooks do not run again for these calls (the
    /// `before_tool` and `after_tool` hooks do).
    pub fn start_turn_approved(
        &self,
        messages: History,
        cx: TurnContext,
        settings: TurnSettings,
        approved: ApprovedCalls,
    ) -> TurnStream {
        let cx = cx.with_agent_id(self.config.agent_id.clone());
        let (emit, rx) = self.channel(&cx);
        let shared = Arc::new(TurnShared::default());
        let turn = Turn::start(
            self.clone(),
            cx,
            emit,
            shared.clone(),
            messages.clone(),
            settings,
        )
        .with_approved(approved);
        TurnStream::new(Box::pin(turn.run(false)), rx, shared, messages)
    }

    /// Continues the turn of `cx.task_id` from its last checkpoint: tool calls
    /// whose results were recorded are not run again. A turn that had already
    /// ended just reports its final state again.
    ///
    /// Per-turn settings are not stored in the checkpoint: the resumed turn
    /// runs with the loop's settings (see [`resume_with`](Self::resume_with)).
    pub fn resume(&self, cx: TurnContext) -> TurnStream {
        self.resume_with(cx, TurnSettings::default())
    }

    /// [`resume`](Self::resume) with settings for the rest of the turn (the
    /// checkpoint does not keep the ones it started with). A wall-time
    /// limit counts from the resume.
    pub fn resume_with(&self, cx: TurnContext, settings: TurnSettings) -> TurnStream {
        let cx = cx.with_agent_id(self.config.agent_id.clone());
        let (emit, rx) = self.channel(&cx);
        let shared = Arc::new(TurnShared::default());
        let this = self.clone();
        let shared2 = shared.clone();
        let driver = async move {
            let checkpoint = match &this.task_store {
                None => Err(LoopError::NoTaskStore),
                Some(store) => match store.load(&cx.task_id).await {
                    Ok(Some(c)) => Ok(c),
                    Ok(None) => Err(LoopError::NoCheckpoint {
                        task_id: cx.task_id.to_string(),
                    }),
                    Err(e) => Err(LoopError::Store(e)),
                },
            };
            match checkpoint {
                Err(e) => {
                    let message = looopy_core::Message::assistant(format!("cannot resume: {e}"));
                    emit.final_status(
                        TurnEnd::Error,
                        Some(message),
                        Default::default(),
                        0,
                        Default::default(),
                    );
                }
                Ok(c) if c.state.ends_turn() => {
                    shared2.set_history(c.messages.clone());
                    let end = match c.state {
                        TaskState::Completed => TurnEnd::Finished,
                        TaskState::InputRequired | TaskState::AuthRequired => {
                            TurnEnd::InputRequired
                        }
                        TaskState::Canceled => TurnEnd::Cancelled,
                        _ => TurnEnd::Error,
                    };
                    let message = c.messages.last().cloned();
                    emit.final_status(end, message, c.usage, c.iteration, Default::default());
                }
                Ok(c) => {
                    shared2.set_history(c.messages.clone());
                    Turn::from_checkpoint(this, cx, emit, shared2, c, settings)
                        .run(true)
                        .await;
                }
            }
        };
        TurnStream::new(Box::pin(driver), rx, shared, History::new())
    }
}

/// Tool calls a person approved (or approved with edited arguments) after
/// a turn asked (see [`hooks::Approval::Ask`]): a new turn runs them before
/// its first model call, appends their results, then `then` (the rest of
/// the person's message, if any), and goes on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApprovedCalls {
    /// The calls to run, with the arguments to run them with.
    pub calls: Vec<looopy_core::ToolCall>,
    /// A message to append after their results.
    pub then: Option<looopy_core::Message>,
}

/// Builds an [`AgentLoop`].
///
/// A loop built from just a model and tools gets the default layers (see
/// [`layers`]): [`RetryPolicy::default()`] around the model (5 retries with
/// backoff, honouring `Retry-After`, malformed responses retried) and a 30 s
/// [`TimeoutLayer`] around every tool provider. Change them with
/// [`retry`](Self::retry) and [`tool_timeout`](Self::tool_timeout) /
/// [`tool_timeouts`](Self::tool_timeouts), or drop both with
/// [`without_default_layers`](Self::without_default_layers). Custom layers
/// ([`llm_layer`](Self::llm_layer), [`tool_layer`](Self::tool_layer)) wrap
/// the defaults, the first added outermost. Every provider is wrapped once,
/// in [`build`](Self::build): give the builder unwrapped providers.
pub struct AgentLoopBuilder {
    llm: Arc<dyn LlmProvider>,
    tools: Vec<Arc<dyn ToolProvider>>,
    task_store: Option<Arc<dyn TaskStateStore>>,
    config: AgentLoopConfig,
    hooks: Vec<Arc<dyn Hook>>,
    hook_failure_mode: HookFailureMode,
    retry: Option<RetryPolicy>,
    tool_timeout: Option<TimeoutLayer>,
    llm_layers: Vec<Arc<dyn LlmLayer>>,
    tool_layers: Vec<Arc<dyn ToolLayer>>,
    tool_output: Option<Arc<tool_output::ToolOutputCache>>,
}

impl AgentLoopBuilder {
    /// A builder with the default settings.
    pub fn new(llm: Arc<dyn LlmProvider>) -> Self {
        AgentLoopBuilder {
            llm,
            tools: Vec::new(),
            task_store: None,
            config: AgentLoopConfig::default(),
            hooks: Vec::new(),
            hook_failure_mode: HookFailureMode::default(),
            retry: Some(RetryPolicy::default()),
            tool_timeout: Some(TimeoutLayer::default()),
            llm_layers: Vec::new(),
            tool_layers: Vec::new(),
            tool_output: None,
        }
    }

    /// How failed model calls are retried (default
    /// [`RetryPolicy::default()`]); [`RetryPolicy::none()`] turns retrying
    /// off.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// The time limit of every tool call (default 30 s); `None` lets calls
    /// run until they end or the turn is cancelled.
    pub fn tool_timeout(mut self, limit: Option<Duration>) -> Self {
        self.tool_timeout = limit.map(TimeoutLayer::new);
        self
    }

    /// The time limits of tool calls, per tool if need be.
    pub fn tool_timeouts(mut self, limits: TimeoutLayer) -> Self {
        self.tool_timeout = Some(limits);
        self
    }

    /// Neither the default retry around the model nor the default timeout
    /// around the tools (for providers that already have their own). Custom
    /// layers, and defaults set again afterwards, still apply.
    pub fn without_default_layers(mut self) -> Self {
        self.retry = None;
        self.tool_timeout = None;
        self
    }

    /// Adds a layer around the model, outside the retry and the layers
    /// added before it.
    pub fn llm_layer(mut self, layer: impl LlmLayer + 'static) -> Self {
        self.llm_layers.push(Arc::new(layer));
        self
    }

    /// Adds a layer around every tool provider, outside the timeout and the
    /// layers added before it.
    pub fn tool_layer(mut self, layer: impl ToolLayer + 'static) -> Self {
        self.tool_layers.push(Arc::new(layer));
        self
    }

    /// Adds a tool provider. Tool names must be unique across providers.
    pub fn tools(mut self, provider: impl ToolProvider + 'static) -> Self {
        self.tools.push(Arc::new(provider));
        self
    }

    /// Adds a shared tool provider.
    pub fn tools_shared(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.tools.push(provider);
        self
    }

    /// Persists checkpoints here (enables [`AgentLoop::resume`]).
    pub fn task_store(mut self, store: Arc<dyn TaskStateStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// Replaces all settings.
    pub fn config(mut self, config: AgentLoopConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets the agent id.
    pub fn agent_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.config.agent_id = id.into();
        self
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<Arc<str>>) -> Self {
        self.config.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the iteration limit.
    pub fn max_iterations(mut self, n: u32) -> Self {
        self.config.max_iterations = n;
        self
    }

    /// Sets how many tool calls run at once.
    pub fn max_parallel_tools(mut self, n: usize) -> Self {
        self.config.max_parallel_tools = n;
        self
    }

    /// Only the done tool ends the turn.
    pub fn require_done_tool(mut self, yes: bool) -> Self {
        self.config.require_done_tool = yes;
        self
    }

    /// Limits the tool calls one turn may run (default: no limit).
    pub fn max_tool_calls(mut self, n: u32) -> Self {
        self.config.max_tool_calls = Some(n);
        self
    }

    /// Limits the wall time one turn may take (default: no limit).
    pub fn max_duration(mut self, limit: std::time::Duration) -> Self {
        self.config.max_duration = Some(limit);
        self
    }

    /// Sets what a failed tool call does (default: the model goes on).
    pub fn tool_failure_mode(mut self, mode: ToolFailureMode) -> Self {
        self.config.tool_failure_mode = mode;
        self
    }

    /// Streams model output (default) or not.
    pub fn stream(mut self, yes: bool) -> Self {
        self.config.stream = yes;
        self
    }

    /// Adds a hook; hooks run in the order they were added.
    pub fn hook(mut self, hook: impl Hook + 'static) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Adds a shared hook.
    pub fn hook_shared(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Stores tool results longer than the cache's limit as artifacts and
    /// offers the model the `read_tool_output` tool to page through them.
    /// A loop has one cache: a second call replaces the first. Its hook runs
    /// before the hooks added with [`hook`](Self::hook), so they see the
    /// result the model will see.
    pub fn tool_output_cache(mut self, cache: tool_output::ToolOutputCache) -> Self {
        self.tool_output = Some(Arc::new(cache));
        self
    }

    /// No tool-output cache (undoes [`tool_output_cache`](Self::tool_output_cache)).
    pub fn without_tool_output_cache(mut self) -> Self {
        self.tool_output = None;
        self
    }

    /// What a failing hook does (default: fail the turn).
    pub fn hook_failure_mode(mut self, mode: HookFailureMode) -> Self {
        self.hook_failure_mode = mode;
        self
    }

    /// The loop, its model and tool providers wrapped in the layers.
    pub fn build(mut self) -> AgentLoop {
        if let Some(cache) = self.tool_output.take() {
            self.tools.push(cache.clone());
            self.hooks.insert(0, cache);
        }
        let llm_stack = LlmStack::new(self.retry, &self.llm_layers);
        let tool_stack = ToolStack::new(self.tool_timeout, &self.tool_layers);
        AgentLoop {
            llm: llm_stack.apply(self.llm),
            tools: self
                .tools
                .into_iter()
                .map(|p| tool_stack.apply(p))
                .collect(),
            task_store: self.task_store,
            config: Arc::new(self.config),
            hooks: Hooks {
                list: self.hooks.into(),
                mode: self.hook_failure_mode,
            },
            metrics: LoopMetrics::new(),
            llm_stack,
        }
    }
}
