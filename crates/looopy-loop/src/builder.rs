//! [`AgentLoopBuilder`]: a loop's model, tools, store, settings, hooks and
//! layers, put together once in [`build`](AgentLoopBuilder::build).

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::CheckpointStore;
use looopy_core::tokens::{SharedCounter, TokenCounter};
use looopy_core::{Deps, LlmProvider, ToolProvider};

use crate::AgentLoop;
use crate::config::AgentLoopConfig;
use crate::config::ToolFailureMode;
use crate::context::{ContextGuard, CountedRequests, RequestEstimator, TurnCompactor};
use crate::hooks::{Hook, HookFailureMode, Hooks};
use crate::layers::{LlmLayer, LlmStack, RetryPolicy, TimeoutLayer, ToolLayer, ToolStack};
use crate::parts::LoopParts;
use crate::telemetry::LoopMetrics;
use crate::tool_output;

/// Builds an [`AgentLoop`].
///
/// A loop built from just a model and tools gets the default layers (see
/// [`layers`](crate::layers)): [`RetryPolicy::default()`] around the model (5 retries with
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
    task_store: Option<Arc<dyn CheckpointStore>>,
    config: AgentLoopConfig,
    hooks: Vec<Arc<dyn Hook>>,
    hook_failure_mode: HookFailureMode,
    retry: Option<RetryPolicy>,
    tool_timeout: Option<TimeoutLayer>,
    llm_layers: Vec<Arc<dyn LlmLayer>>,
    tool_layers: Vec<Arc<dyn ToolLayer>>,
    tool_output: Option<Arc<tool_output::ToolOutputCache>>,
    estimator: Option<Arc<dyn RequestEstimator>>,
    compactor: Option<Arc<dyn TurnCompactor>>,
    deps: Deps,
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
            estimator: None,
            compactor: None,
            deps: Deps::default(),
        }
    }

    /// Gives every turn's tools `value` as the dependency of type `T`
    /// (a database pool, a client, a feature flag): a tool reads it with
    /// [`TurnContext::dep`](looopy_core::TurnContext::dep). A turn
    /// overrides it with a value of the same type on its context
    /// ([`TurnContext::with_dep`](looopy_core::TurnContext::with_dep)).
    pub fn dep<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.deps = self.deps.with(value);
        self
    }

    /// [`dep`](Self::dep) with a value already shared.
    pub fn dep_shared<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.deps = self.deps.with_shared(value);
        self
    }

    /// Adds these dependencies (each replacing one of the same type).
    pub fn deps(mut self, deps: Deps) -> Self {
        self.deps = self.deps.overridden_by(&deps);
        self
    }

    /// The model's context window, for the context guard (see
    /// [`AgentLoopConfig::context_window_tokens`]; by default the model
    /// registry's).
    pub fn context_window_tokens(mut self, tokens: u32) -> Self {
        self.config.context_window_tokens = Some(tokens);
        self
    }

    /// How the context guard counts a request's tokens (default the
    /// [`HeuristicCounter`](looopy_core::tokens::HeuristicCounter)).
    pub fn token_counter(self, counter: Arc<dyn TokenCounter>) -> Self {
        self.request_estimator(Arc::new(CountedRequests(SharedCounter::new(counter))))
    }

    /// How the context guard estimates a request, for a loop whose model
    /// layers change what is sent (see [`RequestEstimator`]).
    pub fn request_estimator(mut self, estimator: Arc<dyn RequestEstimator>) -> Self {
        self.estimator = Some(estimator);
        self
    }

    /// Summarises a turn's older rounds when its next request would not fit
    /// the model's context window; without one, such a turn ends with a
    /// `context_length` failure (see [`TurnCompactor`]).
    pub fn turn_compactor(mut self, compactor: Arc<dyn TurnCompactor>) -> Self {
        self.compactor = Some(compactor);
        self
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
    /// A provider shared with other agents goes in as its `Arc` (`Arc<P>`
    /// is a provider too).
    pub fn tools(mut self, provider: impl ToolProvider + 'static) -> Self {
        self.tools.push(Arc::new(provider));
        self
    }

    /// Persists checkpoints here (enables [`AgentLoop::resume`]).
    pub fn task_store(mut self, store: Arc<dyn CheckpointStore>) -> Self {
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
    /// offers the model the `read_tool_output` tool to page through them
    /// (offered once the turn's history holds such a cut result).
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
        let reader_on_demand = self.tool_output.is_some();
        if let Some(cache) = self.tool_output.take() {
            self.tools.push(cache.clone());
            self.hooks.insert(0, cache);
        }
        let llm_stack = LlmStack::new(self.retry, &self.llm_layers);
        let tool_stack = ToolStack::new(self.tool_timeout, &self.tool_layers);
        let metrics = LoopMetrics::new(self.llm.model_name(), self.llm.provider_name());
        let context = ContextGuard::new(self.llm.as_ref(), self.estimator, self.compactor);
        let tools: Arc<[Arc<dyn ToolProvider>]> = self
            .tools
            .into_iter()
            .map(|p| tool_stack.apply(p))
            .collect();
        AgentLoop::from_parts(LoopParts {
            llm: llm_stack.apply(self.llm),
            fixed_registry: tools.iter().all(|p| p.tools_are_fixed()).then(Arc::default),
            reader_on_demand,
            tools,
            task_store: self.task_store,
            config: Arc::new(self.config),
            hooks: Hooks {
                list: self.hooks.into(),
                mode: self.hook_failure_mode,
            },
            metrics,
            llm_stack,
            context,
            deps: self.deps,
        })
    }
}
