//! [`AgentLoopConfig`]: the settings of a loop, with their defaults (all of
//! them, the Agent's and the stores' too: `docs/behaviour.md#defaults`), and
//! what a failed tool call does ([`ToolFailureMode`]).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use looopy_core::ToolChoice;

/// Settings of an [`AgentLoop`](crate::AgentLoop). Build one through
/// [`AgentLoopBuilder`](crate::AgentLoopBuilder).
#[derive(Debug, Clone)]
pub struct AgentLoopConfig {
    /// Id of the agent (spans, events, checkpoints). Default `"agent"`.
    pub agent_id: Arc<str>,
    /// System prompt, injected at call time and never stored in the history.
    pub system_prompt: Option<Arc<str>>,
    /// Iterations (LLM calls with tools) before the turn is wrapped up with one
    /// last call without tools. Default 10.
    pub max_iterations: u32,
    /// Tool calls of one response that run at once. Default 5.
    pub max_parallel_tools: usize,
    /// When true only the done tool ends the turn; an answer without tool
    /// calls does not. Default false.
    pub require_done_tool: bool,
    /// Stream model output (text arrives as `artifact-update` chunks). Default true.
    pub stream: bool,
    /// Tool choice sent with each request; `None` leaves the provider's default.
    pub tool_choice: Option<ToolChoice>,
    /// Sampling temperature sent with each request.
    pub temperature: Option<f32>,
    /// Token limit sent with each request.
    pub max_tokens: Option<u32>,
    /// The user message of the wrap-up call after `max_iterations`.
    pub final_summary_prompt: Arc<str>,
    /// The answer when the wrap-up call fails.
    pub fallback_final_text: Arc<str>,
    /// Extra prompts that incomplete-work hooks may send in one turn. Default 2.
    pub max_incomplete_prompts: u32,
    /// Tool calls one turn may run; `None` (the default) is no limit. When
    /// the limit is reached the turn is wrapped up like at `max_iterations`
    /// (finish reason `max_tool_calls`); calls the model asks for beyond it
    /// are not run.
    pub max_tool_calls: Option<u32>,
    /// Wall time one turn may take, from its start; `None` (the default) is
    /// no limit. A turn past it is stopped like a cancelled one and ends
    /// `failed` (finish reason `max_duration`, error type `limit_exceeded`).
    pub max_duration: Option<Duration>,
    /// What a failed tool call does (default: the model sees the error and
    /// goes on).
    pub tool_failure_mode: ToolFailureMode,
    /// The model's context window in tokens, which every request of a turn
    /// must fit (the context guard, `docs/behaviour.md#the-context-guard`).
    /// `None` (the default) takes the model registry's
    /// ([`looopy_core::models`], the model found by its provider's and its
    /// own name); a model the registry does not know then has no guard.
    pub context_window_tokens: Option<u32>,
    /// Tokens of the context window held back for the answer. `None` (the
    /// default) is [`max_tokens`](Self::max_tokens), or else the
    /// registry's output limit of the model; never more than half the
    /// window.
    pub context_reserve_tokens: Option<u32>,
}

/// The defaults' texts, allocated once and shared by every loop (a server
/// builds a loop per conversation).
static DEFAULT_AGENT_ID: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("agent"));
static DEFAULT_SUMMARY_PROMPT: LazyLock<Arc<str>> = LazyLock::new(|| {
    Arc::from(
        "You have reached the maximum number of steps for this turn. Do not call any \
         tools. Summarise what you have done and found so far, and answer the user's \
         request as well as you can with that.",
    )
});
static DEFAULT_FALLBACK_TEXT: LazyLock<Arc<str>> =
    LazyLock::new(|| Arc::from("I could not finish this task within the allowed number of steps."));

impl Default for AgentLoopConfig {
    fn default() -> Self {
        AgentLoopConfig {
            agent_id: DEFAULT_AGENT_ID.clone(),
            system_prompt: None,
            max_iterations: 10,
            max_parallel_tools: 5,
            require_done_tool: false,
            stream: true,
            tool_choice: None,
            temperature: None,
            max_tokens: None,
            final_summary_prompt: DEFAULT_SUMMARY_PROMPT.clone(),
            fallback_final_text: DEFAULT_FALLBACK_TEXT.clone(),
            max_incomplete_prompts: 2,
            max_tool_calls: None,
            max_duration: None,
            tool_failure_mode: ToolFailureMode::Continue,
            context_window_tokens: None,
            context_reserve_tokens: None,
        }
    }
}

/// What a tool call that fails does to the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolFailureMode {
    /// The model reads the error as the call's result and goes on (the default).
    #[default]
    Continue,
    /// The first failed call ends the turn `failed` (finish reason
    /// `tool_failed`, error type `tool_failed`); calls of the same batch
    /// still running are cancelled and the model is not called again. A
    /// call counts as failed when its result is an error of any kind
    /// (denied, unknown tool, bad arguments, timeout, panic, a failure the
    /// tool reported); a call the turn's own cancellation stopped does not.
    Fail,
}

impl ToolFailureMode {
    /// The name used in configuration files (`continue`, `fail`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFailureMode::Continue => "continue",
            ToolFailureMode::Fail => "fail",
        }
    }

    /// Reads a mode from its name (`continue`, `fail`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "continue" => Some(ToolFailureMode::Continue),
            "fail" => Some(ToolFailureMode::Fail),
            _ => None,
        }
    }
}
