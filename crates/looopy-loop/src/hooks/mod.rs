//! Hooks: user code at fixed points of a turn: before and after the turn,
//! each model call and each tool call, tool approval, and the prompt sent
//! when the model stops with work left.
//!
//! A [`Hook`] implements the points it cares about; every method has a
//! default that does nothing. Several hooks run in registration order at each
//! point; a change one hook makes (a rewritten request, new arguments) is what
//! the next hook sees. A hook that returns an error emits an
//! `internal:hook-error` event and then, per [`HookFailureMode`], either fails
//! the turn or is ignored.
//!
//! ```
//! use async_trait::async_trait;
//! use looopy_core::ToolCall;
//! use looopy_loop::hooks::{Approval, Hook, HookContext, HookError};
//!
//! /// Refuses one dangerous tool.
//! struct NoDeletes;
//!
//! #[async_trait]
//! impl Hook for NoDeletes {
//!     fn name(&self) -> &str { "no-deletes" }
//!     async fn approve_tool(&self, _cx: &HookContext, call: &ToolCall) -> Result<Approval, HookError> {
//!         Ok(if call.name == "delete_all_data" {
//!             Approval::Deny("Dangerous operation blocked".into())
//!         } else {
//!             Approval::Allow
//!         })
//!     }
//! }
//! ```

use std::sync::Arc;

use std::time::Instant;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use looopy_core::record::{Decided, DecisionPoint, DecisionStep, Recorder};
use looopy_core::{
    History, LlmRequest, LlmResponse, Message, TaskState, ToolCall, ToolFailure, ToolResult,
    TurnContext, Usage,
};

use crate::events::Emitter;
use crate::limits::TurnSettings;

mod points;

pub use points::HookPoints;

/// Why a hook failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{message}")]
pub struct HookError {
    /// What went wrong.
    pub message: String,
}

impl HookError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        HookError {
            message: message.into(),
        }
    }
}

/// What a failing hook does to the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HookFailureMode {
    /// The turn ends `failed` with the hook's error (the default: a broken
    /// guard must not be skipped silently).
    #[default]
    FailTurn,
    /// The failure is reported as an event and the turn goes on as if the
    /// hook had not run.
    Ignore,
}

/// What a hook knows about the turn.
#[derive(Debug, Clone)]
pub struct HookContext {
    /// The turn's context (ids, principal, cancellation).
    pub turn: TurnContext,
    /// The current iteration (0 before the first).
    pub iteration: u32,
}

/// `before_turn`: what a hook changes before the first iteration. The
/// default changes nothing.
///
/// - `history` replaces the messages the turn starts from (what the model is
///   sent). The turn's own messages are those it adds after it: an Agent
///   stores those, not the rewritten history. Ignored when the turn is
///   resumed from a checkpoint (its history is the checkpoint's).
/// - `settings` are overlaid on the turn's settings (each field set replaces
///   the turn's or the loop's value), before the turn reads them.
///
/// The next hook sees the history as this one left it.
#[derive(Debug, Clone, Default)]
pub struct BeforeTurn {
    /// The history the turn starts from instead, if any.
    pub history: Option<History>,
    /// Settings to overlay on the turn's, if any.
    pub settings: Option<TurnSettings>,
}

impl BeforeTurn {
    /// Changes nothing.
    pub fn unchanged() -> Self {
        Self::default()
    }

    /// Starts the turn from `history` instead.
    pub fn with_history(mut self, history: History) -> Self {
        self.history = Some(history);
        self
    }

    /// Overlays `settings` on the turn's.
    pub fn with_settings(mut self, settings: TurnSettings) -> Self {
        self.settings = Some(settings);
        self
    }
}

/// `after_turn`: keep the final message, or replace it.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterTurn {
    /// Keep the final message as it is.
    Keep,
    /// The final event and the outcome carry this message instead. When the
    /// final message is the turn's last history message (an answer, a
    /// done-tool or wrap-up answer) it is replaced there too, so that what is
    /// stored is what the caller was shown. The pending tool calls of an
    /// `input_required` end are kept. The end and its state do not change.
    ReplaceMessage(Message),
}

/// `before_llm`: go on, or answer in the model's place.
#[derive(Debug, Clone)]
pub enum BeforeLlm {
    /// Call the model with the (possibly modified) request.
    Continue,
    /// Do not call the model; use this response.
    Skip(Box<LlmResponse>),
}

/// `before_tool`: go on, or give a result without running the tool.
#[derive(Debug, Clone)]
pub enum BeforeTool {
    /// Run the tool with the (possibly modified) call.
    Continue,
    /// Do not run the tool; the model sees this result (a mock, a cached value).
    Skip(ToolResult),
}

/// `approve_tool`: the approval gate, the one permission mechanism for tool
/// calls (it sees the calls of every provider, per-turn and client tools
/// included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Allow,
    /// Do not run it; the model reads `Error: Tool call denied: <reason>`
    /// (an empty reason reads `permission denied for tool '<name>'`) and the
    /// result's `failure` is [`ToolFailure::Denied`].
    Deny(String),
    /// Ask a person: the call does not run yet. Once every call of the
    /// model's response has run or is waiting, the turn ends
    /// `input-required` with the waiting calls and their questions (see
    /// [`looopy_core::approval`]); the user's next message approves, denies
    /// or edits each. The other calls of the same response run as usual and
    /// their results are kept.
    Ask {
        /// What the person is asked.
        question: String,
    },
}

impl Approval {
    /// A denial with this reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Approval::Deny(reason.into())
    }

    /// Asks a person this question about the call.
    pub fn ask(question: impl Into<String>) -> Self {
        Approval::Ask {
            question: question.into(),
        }
    }
}

/// A hook that asks a person before any call of the named tools runs; the
/// calls of other tools are allowed. The question names the tool and its
/// arguments.
///
/// ```
/// use looopy_loop::hooks::RequireApproval;
///
/// let hook = RequireApproval::new(["delete_file", "send_email"]);
/// assert!(hook.requires("delete_file"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct RequireApproval {
    tools: Vec<String>,
}

impl RequireApproval {
    /// Asks before every call of these tools.
    pub fn new<I, S>(tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        RequireApproval {
            tools: tools.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether calls of `tool` wait for approval.
    pub fn requires(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }

    /// The question asked about `call`.
    pub fn question(call: &ToolCall) -> String {
        format!(
            "Allow {} with arguments {}?",
            call.name,
            call.parsed_arguments()
        )
    }
}

#[async_trait]
impl Hook for RequireApproval {
    fn name(&self) -> &str {
        "require-approval"
    }

    fn points(&self) -> HookPoints {
        HookPoints::APPROVE_TOOL
    }

    async fn approve_tool(
        &self,
        _cx: &HookContext,
        call: &ToolCall,
    ) -> Result<Approval, HookError> {
        Ok(if self.requires(&call.name) {
            Approval::ask(Self::question(call))
        } else {
            Approval::Allow
        })
    }
}

/// A hook that only approves: `approve_tool` is the function, which sees
/// the call and the turn's context (principal, scopes). For a check that
/// needs to await, implement [`Hook::approve_tool`] instead.
///
/// ```
/// use looopy_loop::hooks::{Approval, ApproveFn};
///
/// let admins_only = ApproveFn::new("admins-only", |call, cx| {
///     let admin = cx.turn.auth.as_ref().is_some_and(|a| a.scopes.iter().any(|s| s == "admin"));
///     if call.name == "delete_file" && !admin {
///         Approval::deny("only admins may delete files")
///     } else {
///         Approval::Allow
///     }
/// });
/// # let _ = admins_only;
/// ```
pub struct ApproveFn<F> {
    name: String,
    check: F,
}

impl<F> ApproveFn<F>
where
    F: Fn(&ToolCall, &HookContext) -> Approval + Send + Sync,
{
    /// A hook named `name` that asks `check` about every call.
    pub fn new(name: impl Into<String>, check: F) -> Self {
        ApproveFn {
            name: name.into(),
            check,
        }
    }
}

#[async_trait]
impl<F> Hook for ApproveFn<F>
where
    F: Fn(&ToolCall, &HookContext) -> Approval + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn points(&self) -> HookPoints {
        HookPoints::APPROVE_TOOL
    }

    async fn approve_tool(&self, cx: &HookContext, call: &ToolCall) -> Result<Approval, HookError> {
        Ok((self.check)(call, cx))
    }
}

/// A summary of how a turn is about to end, for `incomplete_work` and `after_turn`.
#[derive(Debug, Clone)]
pub struct EndingTurn {
    /// The state it ends (or would end) in.
    pub state: TaskState,
    /// Why (`finished`, `max_iterations`, ...).
    pub reason: &'static str,
    /// The final answer's text, when there is one.
    pub final_text: Option<String>,
    /// The whole history.
    pub history: History,
    /// Iterations run.
    pub iterations: u32,
    /// Tokens used.
    pub usage: Usage,
}

/// User code at the points of a turn. Implement only what you need.
#[async_trait]
pub trait Hook: Send + Sync {
    /// A name for events and logs.
    fn name(&self) -> &str {
        "hook"
    }

    /// The points this hook implements: it is called at these only. The
    /// default, every point, is always right; naming fewer saves a call per
    /// point left out (see [`HookPoints`]).
    fn points(&self) -> HookPoints {
        HookPoints::ALL
    }

    /// Before the first iteration: change the history the turn starts from
    /// or the turn's settings (see [`BeforeTurn`]).
    async fn before_turn(
        &self,
        _cx: &HookContext,
        _history: &History,
    ) -> Result<BeforeTurn, HookError> {
        Ok(BeforeTurn::unchanged())
    }

    /// Before each model call: modify the request, or skip the call.
    async fn before_llm(
        &self,
        _cx: &HookContext,
        _request: &mut LlmRequest,
    ) -> Result<BeforeLlm, HookError> {
        Ok(BeforeLlm::Continue)
    }

    /// After each model call: modify the response.
    async fn after_llm(
        &self,
        _cx: &HookContext,
        _response: &mut LlmResponse,
    ) -> Result<(), HookError> {
        Ok(())
    }

    /// The approval gate, before `before_tool`.
    async fn approve_tool(
        &self,
        _cx: &HookContext,
        _call: &ToolCall,
    ) -> Result<Approval, HookError> {
        Ok(Approval::Allow)
    }

    /// Before each tool call: modify the arguments, or skip with a result.
    async fn before_tool(
        &self,
        _cx: &HookContext,
        _call: &mut ToolCall,
    ) -> Result<BeforeTool, HookError> {
        Ok(BeforeTool::Continue)
    }

    /// After each tool call: modify the result.
    async fn after_tool(
        &self,
        _cx: &HookContext,
        _call: &ToolCall,
        _result: &mut ToolResult,
    ) -> Result<(), HookError> {
        Ok(())
    }

    /// Each iteration, before the model call: `Some(reason)` pauses the turn
    /// until [`TurnHandle::resume`](crate::TurnHandle::resume).
    async fn pause_check(&self, _cx: &HookContext) -> Result<Option<String>, HookError> {
        Ok(None)
    }

    /// Before a turn ends because the model answered: `Some(prompt)` sends the
    /// model one more user message instead.
    /// Bounded by [`AgentLoopConfig::max_incomplete_prompts`](crate::AgentLoopConfig).
    async fn incomplete_work(
        &self,
        _cx: &HookContext,
        _summary: &EndingTurn,
    ) -> Result<Option<String>, HookError> {
        Ok(None)
    }

    /// After the turn ended, before its final event: keep or replace the
    /// final message (see [`AfterTurn`]).
    async fn after_turn(
        &self,
        _cx: &HookContext,
        _summary: &EndingTurn,
    ) -> Result<AfterTurn, HookError> {
        Ok(AfterTurn::Keep)
    }
}

/// What the gate decided about a call.
pub(crate) enum Gate {
    /// Run it.
    Run,
    /// Do not run it; this is its result.
    Skip(ToolResult),
    /// Ask a person this question; the call waits.
    Ask(String),
}

/// The result of a denied call: the model reads `Tool call denied: <reason>`.
pub(crate) fn denied(call_id: &str, reason: &str) -> ToolResult {
    ToolResult::failed(
        call_id,
        ToolFailure::Denied,
        format!("Tool call denied: {reason}"),
    )
}

/// When a hook was called: the wall clock for the record, and a monotonic
/// clock for its duration.
#[derive(Clone, Copy)]
struct Started(DateTime<Utc>, Instant);

impl Started {
    fn now() -> Self {
        Started(Utc::now(), Instant::now())
    }
}

/// Writes a hook's decision about `call` to the turn's record, if it keeps
/// one.
async fn record_decision(
    recorder: Option<&Recorder>,
    started: Started,
    hook: &dyn Hook,
    call: &ToolCall,
    (point, decision, reason): (DecisionPoint, Decided, Option<String>),
) {
    let Some(recorder) = recorder else {
        return;
    };
    let step = DecisionStep {
        by: hook.name().to_owned(),
        point,
        call_id: Some(call.id.clone()),
        tool: Some(call.name.clone()),
        decision,
        reason,
    };
    recorder
        .decision(started.0, started.1.elapsed(), step)
        .await;
}

/// The hooks of a loop and what their failures do.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub(crate) list: Arc<[Arc<dyn Hook>]>,
    pub(crate) mode: HookFailureMode,
}

/// A hook failure that ends the turn.
#[derive(Debug, Clone)]
pub(crate) struct FatalHook {
    pub(crate) message: String,
}

impl Hooks {
    /// Whether any hook is called at `point`: when none is, the turn
    /// skips building what the point's hooks would read.
    pub(crate) fn any_at(&self, point: HookPoints) -> bool {
        self.at(point).next().is_some()
    }

    /// The hooks called at `point`, in order.
    fn at(&self, point: HookPoints) -> impl Iterator<Item = &Arc<dyn Hook>> {
        self.list.iter().filter(move |h| h.points().contains(point))
    }

    /// Reports a failure; returns it when it must end the turn.
    pub(crate) fn failed(
        &self,
        emit: &Emitter,
        hook: &dyn Hook,
        point: &str,
        e: HookError,
    ) -> Result<(), FatalHook> {
        let fatal = self.mode == HookFailureMode::FailTurn;
        emit.hook_error(hook.name(), point, &e.message, fatal);
        if fatal {
            Err(FatalHook {
                message: format!("hook '{}' failed at {point}: {}", hook.name(), e.message),
            })
        } else {
            Ok(())
        }
    }
}

/// Each point runs every hook in order; the first fatal failure stops it.
impl Hooks {
    /// The history a hook replaced the turn's with, if any; settings the
    /// hooks give are merged into `settings`.
    pub(crate) async fn before_turn(
        &self,
        cx: &HookContext,
        emit: &Emitter,
        history: &History,
        settings: &mut TurnSettings,
    ) -> Result<Option<History>, FatalHook> {
        let mut replaced: Option<History> = None;
        for h in self.at(HookPoints::BEFORE_TURN) {
            match h
                .before_turn(cx, replaced.as_ref().unwrap_or(history))
                .await
            {
                Ok(change) => {
                    if let Some(new) = change.history {
                        replaced = Some(new);
                    }
                    if let Some(s) = change.settings {
                        settings.merge(s);
                    }
                }
                Err(e) => self.failed(emit, h.as_ref(), "before_turn", e)?,
            }
        }
        Ok(replaced)
    }

    /// `Some(response)` when a hook answered in the model's place.
    pub(crate) async fn before_llm(
        &self,
        cx: &HookContext,
        emit: &Emitter,
        request: &mut LlmRequest,
    ) -> Result<Option<LlmResponse>, FatalHook> {
        for h in self.at(HookPoints::BEFORE_LLM) {
            match h.before_llm(cx, request).await {
                Ok(BeforeLlm::Continue) => {}
                Ok(BeforeLlm::Skip(response)) => return Ok(Some(*response)),
                Err(e) => self.failed(emit, h.as_ref(), "before_llm", e)?,
            }
        }
        Ok(None)
    }

    pub(crate) async fn after_llm(
        &self,
        cx: &HookContext,
        emit: &Emitter,
        response: &mut LlmResponse,
    ) -> Result<(), FatalHook> {
        for h in self.at(HookPoints::AFTER_LLM) {
            if let Err(e) = h.after_llm(cx, response).await {
                self.failed(emit, h.as_ref(), "after_llm", e)?;
            }
        }
        Ok(())
    }

    /// Approval (unless a person `approved` the call already), then
    /// `before_tool`.
    pub(crate) async fn gate_tool(
        &self,
        cx: &HookContext,
        emit: &Emitter,
        call: &mut ToolCall,
        approved: bool,
    ) -> Result<Gate, FatalHook> {
        // A call a person approved skips the approval hooks.
        let approvers = self.at(HookPoints::APPROVE_TOOL).filter(|_| !approved);
        let recorder = cx.turn.recorder.as_ref();
        for h in approvers {
            let started = Started::now();
            match h.approve_tool(cx, call).await {
                Ok(Approval::Allow) => {
                    let d = (DecisionPoint::ApproveTool, Decided::Allowed, None);
                    record_decision(recorder, started, h.as_ref(), call, d).await;
                }
                Ok(Approval::Ask { question }) => {
                    tracing::info!(tool = %call.name, hook = h.name(), "tool call waits for approval");
                    let d = (
                        DecisionPoint::ApproveTool,
                        Decided::Asked,
                        Some(question.clone()),
                    );
                    record_decision(recorder, started, h.as_ref(), call, d).await;
                    return Ok(Gate::Ask(question));
                }
                Ok(Approval::Deny(reason)) => {
                    tracing::info!(tool = %call.name, hook = h.name(), %reason, "tool call denied");
                    let reason = if reason.trim().is_empty() {
                        format!("permission denied for tool '{}'", call.name)
                    } else {
                        reason
                    };
                    let d = (
                        DecisionPoint::ApproveTool,
                        Decided::Denied,
                        Some(reason.clone()),
                    );
                    record_decision(recorder, started, h.as_ref(), call, d).await;
                    return Ok(Gate::Skip(denied(&call.id, &reason)));
                }
                Err(e) => self.failed(emit, h.as_ref(), "approve_tool", e)?,
            }
        }
        for h in self.at(HookPoints::BEFORE_TOOL) {
            let started = Started::now();
            // What the hook was given, to tell whether it changed the call.
            let given = recorder.map(|_| call.clone());
            match h.before_tool(cx, call).await {
                Ok(BeforeTool::Continue) => {
                    if given.is_some_and(|g| g != *call) {
                        let d = (DecisionPoint::BeforeTool, Decided::Modified, None);
                        record_decision(recorder, started, h.as_ref(), call, d).await;
                    }
                }
                Ok(BeforeTool::Skip(mut result)) => {
                    result.tool_call_id.clone_from(&call.id);
                    let d = (DecisionPoint::BeforeTool, Decided::Skipped, None);
                    record_decision(recorder, started, h.as_ref(), call, d).await;
                    return Ok(Gate::Skip(result));
                }
                Err(e) => self.failed(emit, h.as_ref(), "before_tool", e)?,
            }
        }
        Ok(Gate::Run)
    }

    pub(crate) async fn after_tool(
        &self,
        cx: &HookContext,
        emit: &Emitter,
        call: &ToolCall,
        result: &mut ToolResult,
    ) -> Result<(), FatalHook> {
        for h in self.at(HookPoints::AFTER_TOOL) {
            if let Err(e) = h.after_tool(cx, call, result).await {
                self.failed(emit, h.as_ref(), "after_tool", e)?;
            }
        }
        Ok(())
    }

    /// The first pause reason any hook gives.
    pub(crate) async fn pause_check(
        &self,
        cx: &HookContext,
        emit: &Emitter,
    ) -> Result<Option<String>, FatalHook> {
        for h in self.at(HookPoints::PAUSE_CHECK) {
            match h.pause_check(cx).await {
                Ok(Some(reason)) => return Ok(Some(reason)),
                Ok(None) => {}
                Err(e) => self.failed(emit, h.as_ref(), "pause_check", e)?,
            }
        }
        Ok(None)
    }

    /// The first extra prompt any hook gives.
    pub(crate) async fn incomplete_work(
        &self,
        cx: &HookContext,
        emit: &Emitter,
        summary: &EndingTurn,
    ) -> Result<Option<String>, FatalHook> {
        for h in self.at(HookPoints::INCOMPLETE_WORK) {
            match h.incomplete_work(cx, summary).await {
                Ok(Some(prompt)) => return Ok(Some(prompt)),
                Ok(None) => {}
                Err(e) => self.failed(emit, h.as_ref(), "incomplete_work", e)?,
            }
        }
        Ok(None)
    }

    /// The replacement of the final message, when a hook gave one (the
    /// last one given wins; each hook sees the text the previous left).
    pub(crate) async fn after_turn(
        &self,
        cx: &HookContext,
        emit: &Emitter,
        summary: &mut EndingTurn,
    ) -> Result<Option<Message>, FatalHook> {
        let mut replaced = None;
        for h in self.at(HookPoints::AFTER_TURN) {
            match h.after_turn(cx, summary).await {
                Ok(AfterTurn::Keep) => {}
                Ok(AfterTurn::ReplaceMessage(message)) => {
                    summary.final_text = Some(message.text());
                    replaced = Some(message);
                }
                Err(e) => self.failed(emit, h.as_ref(), "after_turn", e)?,
            }
        }
        Ok(replaced)
    }
}
