//! One turn: start, iterate, end. The only place that decides termination
//! (the rules, in words: `docs/behaviour.md#termination`).

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use looopy_core::store::{HistoryMark, StreamedAnswer, TaskCheckpoint};
use looopy_core::{Alongside, CancellationToken, alongside};
use looopy_core::{
    History, LlmError, LlmResponse, Message, Role, TaskState, ToolCall, ToolError, ToolOutcome,
    ToolProvider, ToolResult, TurnContext, TurnEnd, Usage,
};
use serde_json::Value;
use tracing::Instrument;

use crate::checkpoint::{self, CheckpointWriter, Snapshot};
use crate::context::TurnSummary;
use crate::events::Emitter;
use crate::hooks::{EndingTurn, HookContext, HookPoints, Hooks};
use crate::input::{ApprovedCalls, TurnInput};
use crate::limits::TurnSettings;
use crate::model_call;
use crate::parts::LoopParts;
use crate::stream::TurnShared;
use crate::tools::ToolRegistry;
use crate::{AgentLoopConfig, LoopError};

mod batch;
mod ending;
mod finish;
mod fit;

use ending::Ending;

/// The state of a turn in progress.
pub(crate) struct Turn {
    pub(crate) parts: Arc<LoopParts>,
    /// The loop's settings, merged with the turn's once it starts (the
    /// loop's own are shared by all its turns).
    pub(crate) config: Arc<AgentLoopConfig>,
    pub(crate) cx: TurnContext,
    pub(crate) emit: Emitter,
    pub(crate) shared: Arc<TurnShared>,
    pub(crate) history: History,
    pub(crate) turn_start: usize,
    pub(crate) iteration: u32,
    pub(crate) usage: Usage,
    pub(crate) created_at: DateTime<Utc>,
    /// Results of the current batch that finished before the batch did.
    pub(crate) completed: Vec<ToolResult>,
    /// This turn's answers streamed as artifacts (kept in its checkpoints,
    /// announced again by a resume).
    streamed: Vec<StreamedAnswer>,
    /// The stored history the turn's history starts with (see
    /// `TurnInput::stored_history`).
    stored_history: Option<HistoryMark>,
    /// Extra prompts sent by incomplete-work hooks so far.
    incomplete_prompts: u32,
    /// Tool calls dispatched so far (for `max_tool_calls`).
    tool_calls: u32,
    /// The turn's settings, until the turn starts and merges them into the
    /// loop's configuration (`agent.config` is the merged one after that).
    settings: TurnSettings,
    /// Tools offered in this turn only, beside the loop's own.
    turn_tools: Option<Arc<dyn ToolProvider>>,
    /// Saves checkpoints in the background.
    writer: CheckpointWriter,
    /// Calls a person approved, run before the first iteration.
    approved: Option<Box<ApprovedCalls>>,
    /// The summary of the turn's older rounds, once the context guard
    /// compacted them (what the model is sent; the history keeps them).
    summary: Option<TurnSummary>,
}

/// What one iteration decided.
#[allow(
    clippy::large_enum_variant,
    reason = "returned once per iteration and matched at once, never stored"
)]
enum Step {
    Continue,
    End(Ending),
}

impl Turn {
    /// A new turn over `history`.
    pub(crate) fn start(
        parts: Arc<LoopParts>,
        cx: TurnContext,
        emit: Emitter,
        shared: Arc<TurnShared>,
        history: History,
        input: TurnInput,
    ) -> Self {
        let TurnInput {
            settings,
            tools,
            stored_history,
        } = input;
        let stored_history = stored_history.filter(|m| m.len <= history.len());
        let writer = CheckpointWriter::new(parts.task_store.clone(), emit.clone());
        Turn {
            writer,
            config: parts.config.clone(),
            parts,
            cx,
            emit,
            shared,
            turn_start: history.len(),
            history,
            iteration: 0,
            usage: Usage::default(),
            created_at: Utc::now(),
            completed: Vec::new(),
            streamed: Vec::new(),
            stored_history,
            incomplete_prompts: 0,
            tool_calls: 0,
            settings,
            turn_tools: tools,
            approved: None,
            summary: None,
        }
    }

    /// Runs these approved calls before the first iteration.
    pub(crate) fn with_approved(mut self, approved: ApprovedCalls) -> Self {
        self.approved = Some(Box::new(approved));
        self
    }

    /// A turn continuing from a checkpoint.
    pub(crate) fn from_checkpoint(
        parts: Arc<LoopParts>,
        cx: TurnContext,
        emit: Emitter,
        shared: Arc<TurnShared>,
        c: TaskCheckpoint,
        input: TurnInput,
    ) -> Self {
        let mut turn = Self::start(parts, cx, emit, shared, c.messages, input);
        turn.turn_start = c.turn_start;
        turn.iteration = c.iteration;
        turn.usage = c.usage;
        turn.created_at = c.created_at;
        turn.completed = c.completed_tool_results;
        turn.streamed = c.streamed_answers;
        turn.stored_history = c.stored_history;
        turn
    }

    fn span(&self) -> tracing::Span {
        tracing::info_span!(
            "invoke_agent",
            otel.name = %format_args!("invoke_agent {}", self.cx.agent_id),
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = %self.cx.agent_id,
            gen_ai.conversation.id = %self.cx.context_id,
            a2a.task.id = %self.cx.task_id,
            a2a.task.state = tracing::field::Empty,
            looopy.turn.end = tracing::field::Empty,
            error.type = tracing::field::Empty,
        )
    }

    fn hook_cx(&self) -> HookContext {
        HookContext {
            turn: self.cx.clone(),
            iteration: self.iteration,
        }
    }

    /// Runs the turn to its end and emits the final event.
    ///
    /// Not an `async fn`, which would keep `self` twice in its future (the
    /// argument and the local it moves into); the future lives as long as
    /// the turn, for every running conversation.
    #[allow(clippy::manual_async_fn, reason = "an async fn stores self twice")]
    pub(crate) fn run(mut self, resumed: bool) -> impl Future<Output = ()> + Send {
        async move {
            let span = self.span();
            self.run_in_span(resumed).instrument(span).await
        }
    }

    async fn run_in_span(&mut self, resumed: bool) {
        let started = Instant::now();
        if !resumed {
            self.emit.task_submitted();
        }
        self.emit.status(TaskState::Working);
        self.emit.execution_start(resumed);
        if resumed {
            checkpoint::announce_streamed(&self.emit, &self.history, &self.streamed);
        }
        let ending = self.body(resumed, started).await;
        let span = tracing::Span::current();
        span.record("looopy.turn.end", ending.end.as_str());
        span.record("a2a.task.state", ending.end.state().as_str());
        if let Some(e) = &ending.error {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", e.kind.as_str());
            tracing::error!(error = %e.message, "turn failed");
        }
        self.finish(ending, started).await;
    }

    /// The turn's tools: the loop's, listed once when they are fixed, and
    /// the turn's own.
    async fn registry(&self) -> Result<ToolRegistry, ToolError> {
        let tools = &self.parts.tools;
        let build = |providers| async move {
            let registry = ToolRegistry::build(providers, &self.cx).await?;
            Ok::<_, ToolError>(if self.parts.reader_on_demand {
                registry.reader_on_demand()
            } else {
                registry
            })
        };
        let Some(fixed) = &self.parts.fixed_registry else {
            let providers = match &self.turn_tools {
                None => tools.clone(),
                Some(extra) => tools.iter().cloned().chain([extra.clone()]).collect(),
            };
            return build(providers).await;
        };
        let listed = fixed.get_or_try_init(|| build(tools.clone())).await?;
        match &self.turn_tools {
            None => Ok(listed.clone()),
            Some(extra) => listed.with_provider(extra.clone(), &self.cx).await,
        }
    }

    /// Builds the registry, runs the `before_turn` hooks, merges the turn's
    /// settings, then iterates under the wall-time limit, if any.
    async fn body(&mut self, resumed: bool, started: Instant) -> Ending {
        let registry = match self.registry().await {
            Ok(r) => r,
            Err(e) => return Ending::failed(LoopError::from(e).to_string(), "configuration"),
        };
        let mut settings = std::mem::take(&mut self.settings);
        match self
            .parts
            .hooks
            .before_turn(&self.hook_cx(), &self.emit, &self.history, &mut settings)
            .await
        {
            Ok(Some(history)) if !resumed => {
                // The turn's own messages are those added after the rewrite,
                // and the history no longer starts with the stored one.
                self.turn_start = history.len();
                self.stored_history = None;
                self.history = history;
                self.shared.set_history(self.history.clone());
            }
            Ok(_) => {}
            Err(f) => return Ending::hook(f),
        }
        if !settings.is_empty() {
            // From here on the turn reads the merged values only.
            self.config = Arc::new(settings.apply(&self.config));
        }
        let Some(limit) = self.config.max_duration else {
            return within(self.iterations(&registry, resumed), None).await;
        };
        // The limit counts from the turn's start. At the deadline the turn is
        // cancelled through a child of its token (a running model call or
        // tool stops as at a cancel), then its end is rewritten.
        let deadline = tokio::time::Instant::from_std(started) + limit;
        let outer = self.cx.cancel.clone();
        let inner = outer.child_token();
        self.cx.cancel = inner.clone();
        let ending = within(
            self.iterations(&registry, resumed),
            Some((deadline, inner.clone())),
        )
        .await;
        self.cx.cancel = outer.clone();
        if ending.end == TurnEnd::Cancelled && inner.is_cancelled() && !outer.is_cancelled() {
            // The report says `maxDurationReached` (the ending's limit flag).
            return Ending::failed_as(
                TurnEnd::MaxDuration,
                format!("The turn ran past its time limit of {limit:?} and was stopped."),
                "limit_exceeded",
            );
        }
        ending
    }

    /// Runs the calls a resume left pending, then iterates until an end.
    async fn iterations(&mut self, registry: &ToolRegistry, resumed: bool) -> Ending {
        if resumed {
            let pending =
                checkpoint::pending_calls(&self.history, self.turn_start, &self.completed);
            let approved = pending.approved;
            let calls = self.interrupted_calls(registry, pending.calls);
            if (!calls.is_empty() || !self.completed.is_empty())
                && let Step::End(ending) = self.run_tools(registry, calls, approved).await
            {
                return ending;
            }
        } else if let Some(approved) = self.approved.take() {
            let approved = *approved;
            if !approved.answers.0.is_empty() {
                let deps = std::mem::take(&mut self.cx.deps);
                self.cx.deps = deps.with(approved.answers.clone());
            }
            // A crash while they run must find them: a resume runs them
            // again (idempotent tools) or reports them interrupted.
            self.checkpoint(TaskState::Working);
            self.record_before_side_effects(registry, &approved.calls)
                .await;
            let calls: Vec<(usize, ToolCall)> = approved.calls.into_iter().enumerate().collect();
            if let Step::End(ending) = self.run_tools(registry, calls, true).await {
                return ending;
            }
            if let Some(message) = approved.then {
                self.push(message);
            }
        }
        loop {
            if self.cx.cancel.is_cancelled() {
                return Ending::new(TurnEnd::Cancelled, None);
            }
            if self.iteration >= self.config.max_iterations {
                return self.wrap_up(TurnEnd::MaxIterations).await;
            }
            if let Some(max) = self.config.max_tool_calls
                && self.tool_calls >= max
            {
                return self.wrap_up(TurnEnd::MaxToolCalls).await;
            }
            self.iteration += 1;
            let iteration = self.iteration;
            let span = tracing::info_span!(
                "iteration",
                otel.name = %format_args!("iteration {iteration}"),
                looopy.iteration = iteration,
                error.type = tracing::field::Empty,
            );
            let started = Instant::now();
            self.emit.iteration_start(iteration);
            let step = self.iterate(registry).instrument(span).await;
            self.emit
                .iteration_complete(iteration, started.elapsed().as_millis() as u64);
            if let Step::End(ending) = step {
                return ending;
            }
        }
    }

    /// Decides what happens to the calls a crash left without a result (see
    /// `docs/tools.md`, "Tool calls across a crash"): those of an idempotent
    /// tool are returned, to run again; every other one gets
    /// [`ToolResult::interrupted()`] as its result, without running. Each
    /// decision is an `internal:tool-interrupted` event.
    fn interrupted_calls(
        &mut self,
        registry: &ToolRegistry,
        pending: Vec<(usize, ToolCall)>,
    ) -> Vec<(usize, ToolCall)> {
        let mut again = Vec::with_capacity(pending.len());
        let mut given_up = false;
        for (position, call) in pending {
            let retried = registry.is_idempotent(&call.name);
            self.emit.tool_interrupted(&call, retried);
            if retried {
                again.push((position, call));
                continue;
            }
            tracing::warn!(
                tool = %call.name,
                call_id = %call.id,
                "a tool call was in flight when the turn stopped; its tool is not idempotent, so it is not run again"
            );
            let result = ToolResult::interrupted(&call.id, &call.name);
            self.emit
                .tool_complete(&call.name, &result, ToolOutcome::of(&result), 0);
            self.completed.push(result);
            given_up = true;
        }
        if given_up {
            // A second crash must not decide again: these results are recorded.
            self.checkpoint(TaskState::Working);
        }
        again
    }

    /// One iteration: pause check, model call (with its hooks), then tools.
    async fn iterate(&mut self, registry: &ToolRegistry) -> Step {
        self.checkpoint(TaskState::Working);
        // In a block of its own: the answer's parts are gone before the
        // tools run (a future keeps room for every local still in scope
        // at a wait, moved out or not).
        let (calls, text) = {
            let (mut response, streamed_to) = match self.answer(registry).await {
                Ok(answer) => answer,
                Err(step) => return step,
            };
            self.add_usage(response.usage);
            ensure_call_ids(&mut response.message.tool_calls);
            if let Some(reasoning) = response.reasoning.take() {
                self.emit.reasoning(reasoning);
            }
            let calls = response.message.tool_calls.clone();
            let text = response.message.text();
            self.push(response.message);
            if !text.is_empty()
                && let Some(artifact_id) = streamed_to
            {
                self.note_streamed(artifact_id);
            }
            (calls, text)
        };
        self.checkpoint(TaskState::Working);
        if calls.is_empty() {
            if self.config.require_done_tool {
                if !text.is_empty() {
                    self.emit.text(text);
                }
                return Step::Continue;
            }
            return self.model_finished().await;
        }
        if !text.is_empty() {
            self.emit.text(text);
        }
        self.emit.tool_detected(self.iteration, &calls);
        self.record_before_side_effects(registry, &calls).await;
        self.run_tools(registry, calls.into_iter().enumerate().collect(), false)
            .await
    }

    /// The model's answer for this iteration, with the artifact its text
    /// went out on (none for a response a hook gave instead of the model):
    /// pause check, the `before_llm` hooks, the call, the `after_llm` hooks.
    async fn answer(
        &mut self,
        registry: &ToolRegistry,
    ) -> Result<(LlmResponse, Option<String>), Step> {
        let hooks = self.parts.hooks.clone();
        match hooks.pause_check(&self.hook_cx(), &self.emit).await {
            Ok(Some(reason)) => self.shared.pause.pause(reason),
            Ok(None) => {}
            Err(f) => return Err(Step::End(Ending::hook(f))),
        }
        if !self.shared.pause.wait(&self.cx.cancel, &self.emit).await {
            return Err(Step::End(Ending::new(TurnEnd::Cancelled, None)));
        }
        // In a block: the request the hooks saw is gone before the call
        // (which takes its own), rather than kept beside it.
        let asked = {
            let config = self.config.clone();
            let mut request = model_call::request(
                &config,
                self.sent_history(),
                registry.offered(&self.history),
                config.tool_choice.clone(),
            );
            request.keep_from = Some(self.input_start());
            // The guard before the hooks: a compaction rebuilds the messages.
            if let Err(ending) = self.fit(&mut request, &History::clone, true).await {
                return Err(Step::End(ending));
            }
            let mut checked = match hooks
                .before_llm(&self.hook_cx(), &self.emit, &mut request)
                .await
            {
                Ok(None) => Ok(request),
                Ok(Some(skipped)) => Err(skipped),
                Err(f) => return Err(Step::End(Ending::hook(f))),
            };
            // And after them, on what they made of it: checked only.
            if let Ok(request) = &mut checked
                && hooks.any_at(HookPoints::BEFORE_LLM)
                && let Err(ending) = self.fit(request, &History::clone, false).await
            {
                return Err(Step::End(ending));
            }
            checked
        };
        let request = match asked {
            Ok(request) => request,
            Err(skipped) => return self.after_llm(&hooks, skipped, None).await,
        };
        let iteration = self.iteration;
        let artifact_id = crate::events::response_artifact_id(&self.cx.task_id, Some(iteration));
        let called = model_call::call_model(
            &self.parts,
            &self.config,
            request,
            &self.cx,
            &self.emit,
            iteration,
            &artifact_id,
        )
        .await;
        match called {
            Ok(response) => self.after_llm(&hooks, response, Some(artifact_id)).await,
            Err(LlmError::Cancelled) => Err(Step::End(Ending::new(TurnEnd::Cancelled, None))),
            Err(e) => {
                self.emit.llm_error(iteration, &e);
                tracing::Span::current().record("error.type", e.kind());
                Err(Step::End(Ending::failed(
                    format!("LLM call failed: {e}"),
                    e.kind(),
                )))
            }
        }
    }

    /// Runs the `after_llm` hooks on the model's answer.
    async fn after_llm(
        &self,
        hooks: &Hooks,
        mut response: LlmResponse,
        streamed_to: Option<String>,
    ) -> Result<(LlmResponse, Option<String>), Step> {
        match hooks
            .after_llm(&self.hook_cx(), &self.emit, &mut response)
            .await
        {
            Ok(()) => Ok((response, streamed_to)),
            Err(f) => Err(Step::End(Ending::hook(f))),
        }
    }

    /// The model answered without tool calls: the turn ends unless an
    /// incomplete-work hook sends one more prompt (bounded).
    async fn model_finished(&mut self) -> Step {
        let last = self.history.last_shared().cloned();
        if self.incomplete_prompts < self.config.max_incomplete_prompts
            && self.parts.hooks.any_at(HookPoints::INCOMPLETE_WORK)
        {
            let summary = self.summary(TurnEnd::Finished, last.as_deref());
            match self
                .parts
                .hooks
                .incomplete_work(&self.hook_cx(), &self.emit, &summary)
                .await
            {
                Ok(Some(prompt)) => {
                    self.incomplete_prompts += 1;
                    let mut message = Message::user(prompt);
                    message
                        .metadata
                        .insert("looopyIncompleteWork".into(), Value::Bool(true));
                    self.push(message);
                    return Step::Continue;
                }
                Ok(None) => {}
                Err(f) => return Step::End(Ending::hook(f)),
            }
        }
        Step::End(Ending::new(TurnEnd::Finished, last))
    }

    /// Where the turn's input begins: the user's message and the client
    /// results before it, which a window keeps with the turn's own
    /// messages ([`LlmRequest::keep_from`](looopy_core::LlmRequest::keep_from)).
    fn input_start(&self) -> usize {
        let before = self.turn_start.min(self.history.len());
        let input = self
            .history
            .iter()
            .take(before)
            .rev()
            .take_while(|m| matches!(m.role, Role::User | Role::Tool))
            .count();
        before - input
    }

    fn last_assistant(&self) -> Option<&Message> {
        self.history
            .iter()
            .skip(self.turn_start)
            .rev()
            .find(|m| m.role == Role::Assistant)
    }

    fn add_usage(&mut self, usage: Option<Usage>) {
        if let Some(u) = usage {
            self.usage += u;
            self.emit.usage(u, self.usage);
        }
    }

    fn push(&mut self, message: impl Into<Arc<Message>>) {
        self.history.push_shared(message.into());
        self.shared.set_history(self.history.clone());
    }

    fn summary(&self, end: TurnEnd, message: Option<&Message>) -> EndingTurn {
        EndingTurn {
            state: end.state(),
            reason: end.as_str(),
            final_text: message.map(Message::text),
            history: self.history.clone(),
            iterations: self.iteration,
            usage: self.usage,
        }
    }

    /// Hands the current state to the checkpoint writer (it does not wait).
    /// The last message's text went out on `artifact_id`: the checkpoints
    /// say so from now on (see [`StreamedAnswer`]).
    fn note_streamed(&mut self, artifact_id: String) {
        let message = self.history.len().saturating_sub(1);
        self.streamed.push(StreamedAnswer {
            artifact_id,
            message,
        });
    }

    fn checkpoint(&self, state: TaskState) {
        let snapshot = Snapshot {
            iteration: self.iteration,
            state,
            history: &self.history,
            turn_start: self.turn_start,
            usage: self.usage,
            created_at: self.created_at,
            completed: &self.completed,
            streamed: &self.streamed,
            stored_history: self.stored_history.as_ref(),
        };
        self.writer.submit(&self.cx, snapshot);
    }
}

/// A turn's iterations under its time limit, if any: at the deadline the
/// token (which the iterations watch) is cancelled, and the iterations
/// stop at their next await. Both ways through [`Turn::body`] await the
/// iterations through this one [`Alongside`]: awaited in two places (or by
/// an `async fn` taking them by value), the turn's future kept room for two
/// of them in every running turn.
fn within<F: Future<Output = Ending>>(
    run: F,
    deadline: Option<(tokio::time::Instant, CancellationToken)>,
) -> Alongside<F, impl Future<Output = ()>> {
    let cancel_at = deadline.map(|(at, cancel)| async move {
        tokio::time::sleep_until(at).await;
        cancel.cancel();
    });
    alongside(run, cancel_at)
}

/// Gives every call of one model response its own id: a call without one,
/// or with the id of an earlier call of the same response, gets a new one.
/// The id is the call's idempotency key and how its result finds it; it is
/// made here once and stored with the assistant message, so that it stays
/// the same when the turn is resumed.
fn ensure_call_ids(calls: &mut [ToolCall]) {
    let mut seen: HashSet<String> = HashSet::with_capacity(calls.len());
    for call in calls {
        if call.id.is_empty() || seen.contains(&call.id) {
            call.id = format!("call_{}", uuid::Uuid::now_v7().simple());
        }
        seen.insert(call.id.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_repeated_call_ids_are_replaced_once() {
        let mut calls = vec![
            ToolCall::new("", "t", "{}"),
            ToolCall::new("a", "t", "{}"),
            ToolCall::new("a", "t", "{}"),
            ToolCall::new("", "t", "{}"),
        ];
        ensure_call_ids(&mut calls);
        assert_eq!(calls[1].id, "a", "a model's own id is kept");
        let ids: HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), 4, "{calls:?}");
        assert!(ids.iter().all(|id| !id.is_empty()));
        let before = calls.clone();
        ensure_call_ids(&mut calls);
        assert_eq!(calls, before, "ids already given are never replaced");
    }
}
