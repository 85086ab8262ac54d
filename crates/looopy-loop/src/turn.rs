//! One turn: start, iterate, end. The only place that decides termination.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use looopy_core::store::TaskCheckpoint;
use looopy_core::{
    History, LlmError, Message, Part, Role, TaskState, ToolCall, ToolChoice, ToolResult,
    ToolSignal, TurnContext, Usage,
};
use serde_json::{Map, Value, json};
use tracing::Instrument;

use crate::checkpoint::{self, Snapshot};
use crate::events::{Emitter, TurnEnd};
use crate::iteration;
use crate::stream::{TurnOutcome, TurnShared};
use crate::tools::{self, ToolRegistry};
use crate::{AgentLoop, LoopError};

/// The state of a turn in progress.
pub(crate) struct Turn {
    pub(crate) agent: AgentLoop,
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
}

/// How the loop body ended.
struct Ending {
    end: TurnEnd,
    message: Option<Message>,
    metadata: Map<String, Value>,
}

impl Ending {
    fn new(end: TurnEnd, message: Option<Message>) -> Self {
        Ending {
            end,
            message,
            metadata: Map::new(),
        }
    }

    fn failed(message: impl Into<String>, kind: &str) -> Self {
        let text = message.into();
        let mut ending = Ending::new(TurnEnd::Error, Some(Message::assistant(text.clone())));
        ending
            .metadata
            .insert("error".into(), json!({ "type": kind, "message": text }));
        ending
    }
}

impl Turn {
    /// A new turn over `history`.
    pub(crate) fn start(
        agent: AgentLoop,
        cx: TurnContext,
        emit: Emitter,
        shared: Arc<TurnShared>,
        history: History,
    ) -> Self {
        let turn_start = history.len();
        Turn {
            agent,
            cx,
            emit,
            shared,
            history,
            turn_start,
            iteration: 0,
            usage: Usage::default(),
            created_at: Utc::now(),
            completed: Vec::new(),
        }
    }

    /// A turn continuing from a checkpoint.
    pub(crate) fn from_checkpoint(
        agent: AgentLoop,
        cx: TurnContext,
        emit: Emitter,
        shared: Arc<TurnShared>,
        c: TaskCheckpoint,
    ) -> Self {
        Turn {
            agent,
            cx,
            emit,
            shared,
            history: c.messages,
            turn_start: c.turn_start,
            iteration: c.iteration,
            usage: c.usage,
            created_at: c.created_at,
            completed: c.completed_tool_results,
        }
    }

    fn span(&self) -> tracing::Span {
        tracing::info_span!(
            "invoke_agent",
            otel.name = %format_args!("invoke_agent {}", self.cx.agent_id),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = %self.cx.agent_id,
            gen_ai.conversation.id = %self.cx.context_id,
            a2a.task.id = %self.cx.task_id,
            looopy.turn.end = tracing::field::Empty,
        )
    }

    /// Runs the turn to its end and emits the final event.
    pub(crate) async fn run(mut self, resumed: bool) {
        let span = self.span();
        async move {
            if !resumed {
                self.emit.task_submitted();
            }
            self.emit.status(TaskState::Working);
            let ending = self.body(resumed).await;
            tracing::Span::current().record("looopy.turn.end", ending.end.as_str());
            self.finish(ending).await;
        }
        .instrument(span)
        .await
    }

    async fn body(&mut self, resumed: bool) -> Ending {
        let registry = match ToolRegistry::build(self.agent.tools.clone(), &self.cx).await {
            Ok(r) => r,
            Err(e) => return Ending::failed(LoopError::from(e).to_string(), "configuration"),
        };
        if resumed {
            let pending =
                checkpoint::pending_calls(&self.history, self.turn_start, &self.completed);
            if (!pending.is_empty() || !self.completed.is_empty())
                && let Some(ending) = self.run_tools(&registry, pending).await
            {
                return ending;
            }
        }
        let config = self.agent.config.clone();
        loop {
            if self.cx.cancel.is_cancelled() {
                return Ending::new(TurnEnd::Cancelled, None);
            }
            if self.iteration >= config.max_iterations {
                return self.wrap_up().await;
            }
            self.iteration += 1;
            let iteration = self.iteration;
            let span = tracing::info_span!("iteration", otel.name = %format_args!("iteration {iteration}"), looopy.iteration = iteration);
            let step = async {
                self.checkpoint(TaskState::Working).await;
                let request = iteration::request(
                    &config,
                    self.history.clone(),
                    registry.definitions(),
                    config.tool_choice.clone(),
                );
                let artifact_id = format!("{}-response-{iteration}", self.cx.task_id);
                let response = match iteration::call_model(
                    self.agent.llm.as_ref(),
                    &config,
                    request,
                    &self.cx,
                    &self.emit,
                    iteration,
                    &artifact_id,
                )
                .await
                {
                    Ok(r) => r,
                    Err(LlmError::Cancelled) => return Some(Ending::new(TurnEnd::Cancelled, None)),
                    Err(e) => {
                        tracing::Span::current().record("error.type", e.kind());
                        return Some(Ending::failed(format!("LLM call failed: {e}"), e.kind()));
                    }
                };
                self.add_usage(response.usage);
                if let Some(reasoning) = response.reasoning.clone() {
                    self.emit.reasoning(reasoning);
                }
                let calls = response.message.tool_calls.clone();
                let text = response.message.text();
                self.push(response.message);
                self.checkpoint(TaskState::Working).await;
                if calls.is_empty() {
                    if config.require_done_tool {
                        if !text.is_empty() {
                            self.emit.text(text);
                        }
                        return None;
                    }
                    let last = self.history.last().cloned();
                    return Some(Ending::new(TurnEnd::Finished, last));
                }
                if !text.is_empty() {
                    self.emit.text(text);
                }
                let indexed = calls.into_iter().enumerate().collect();
                self.run_tools(&registry, indexed).await
            }
            .instrument(span);
            if let Some(ending) = step.await {
                return ending;
            }
        }
    }

    /// Runs the pending calls of the last assistant message, appends every
    /// result of that message in the model's order, and reads their signals.
    async fn run_tools(
        &mut self,
        registry: &ToolRegistry,
        calls: Vec<(usize, ToolCall)>,
    ) -> Option<Ending> {
        let limit = self.agent.config.max_parallel_tools.max(1);
        let cx = self.cx.clone();
        let emit = self.emit.clone();
        let span = tracing::info_span!(
            "tools",
            otel.name = "execute_tools",
            looopy.tool_count = calls.len()
        );
        let futures = tools::call_futures(registry, &calls, &cx, &emit);
        let mut running = futures::stream::iter(futures).buffer_unordered(limit);
        let cancelled = loop {
            let next = tokio::select! {
                biased;
                _ = cx.cancel.cancelled() => break true,
                next = running.next().instrument(span.clone()) => next,
            };
            let Some(f) = next else { break false };
            emit.tool_complete(&f.call.name, &f.result, f.outcome, f.duration_ms);
            self.completed.push(f.result);
            self.checkpoint(TaskState::Working).await;
        };
        drop(running);
        if cancelled {
            // `completed` stays in the checkpoint: a resume does not run those again.
            return Some(Ending::new(TurnEnd::Cancelled, None));
        }
        let mut results = std::mem::take(&mut self.completed);
        // Order every result of the assistant message as the model asked.
        let order: Vec<String> = self
            .history
            .iter()
            .skip(self.turn_start)
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.tool_calls.iter().map(|c| c.id.clone()).collect())
            .unwrap_or_default();
        results.sort_by_key(|r| {
            order
                .iter()
                .position(|id| *id == r.tool_call_id)
                .unwrap_or(usize::MAX)
        });
        let mut done: Option<Option<String>> = None;
        let mut waiting: Vec<ToolCall> = Vec::new();
        for result in results {
            match &result.signal {
                Some(ToolSignal::InputRequired) => {
                    if let Some(call) = calls.iter().find(|(_, c)| c.id == result.tool_call_id) {
                        waiting.push(call.1.clone());
                    }
                    continue;
                }
                Some(ToolSignal::Done { message }) => done = Some(message.clone()),
                None => {}
            }
            self.push(result.into_message());
        }
        if !waiting.is_empty() {
            return Some(self.input_required(waiting));
        }
        if let Some(message) = done {
            let text = message.unwrap_or_else(|| self.last_assistant_text());
            let answer = Message::assistant(text);
            self.push(answer.clone());
            return Some(Ending::new(TurnEnd::DoneTool, Some(answer)));
        }
        None
    }

    fn input_required(&self, waiting: Vec<ToolCall>) -> Ending {
        let names: Vec<&str> = waiting.iter().map(|c| c.name.as_str()).collect();
        let calls = serde_json::to_value(&waiting).unwrap_or(Value::Null);
        let mut message = Message::with_parts(
            Role::Assistant,
            vec![
                Part::text(format!(
                    "Waiting for the client to run: {}",
                    names.join(", ")
                )),
                Part::data(json!({ "pendingToolCalls": calls })),
            ],
        );
        message.tool_calls = waiting;
        let mut ending = Ending::new(TurnEnd::InputRequired, Some(message));
        ending.metadata.insert("pendingToolCalls".into(), calls);
        ending
    }

    fn last_assistant_text(&self) -> String {
        self.history
            .iter()
            .skip(self.turn_start)
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(Message::text)
            .unwrap_or_default()
    }

    /// Seed 003 §6: one last call without tools on a temporary copy of the
    /// history plus a summary prompt; a fixed text if that fails.
    async fn wrap_up(&mut self) -> Ending {
        let config = self.agent.config.clone();
        let mut messages = self.history.clone();
        messages.push(Message::user(config.final_summary_prompt.to_string()));
        let request = iteration::request(
            &config,
            messages,
            Arc::from(Vec::new()),
            Some(ToolChoice::None),
        );
        let artifact_id = format!("{}-response-final", self.cx.task_id);
        let result = iteration::call_model(
            self.agent.llm.as_ref(),
            &config,
            request,
            &self.cx,
            &self.emit,
            self.iteration + 1,
            &artifact_id,
        )
        .await;
        let answer = match result {
            Err(LlmError::Cancelled) => return Ending::new(TurnEnd::Cancelled, None),
            Ok(response) => {
                self.add_usage(response.usage);
                let mut message = response.message;
                // Tool calls are not wanted here; a model that sends some anyway
                // must not leave unanswered calls in the history.
                message.tool_calls.clear();
                if message.text().is_empty() {
                    Message::assistant(config.fallback_final_text.to_string())
                } else {
                    message
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "wrap-up call failed; answering with the fallback text");
                Message::assistant(config.fallback_final_text.to_string())
            }
        };
        self.push(answer.clone());
        let mut ending = Ending::new(TurnEnd::MaxIterations, Some(answer));
        ending
            .metadata
            .insert("maxIterationsReached".into(), Value::Bool(true));
        ending
    }

    fn add_usage(&mut self, usage: Option<looopy_core::Usage>) {
        if let Some(u) = usage {
            self.usage += u;
            self.emit.usage(u, self.usage);
        }
    }

    fn push(&mut self, message: Message) {
        self.history.push(message);
        self.shared.set_history(self.history.clone());
    }

    async fn checkpoint(&self, state: TaskState) {
        let snapshot = Snapshot {
            iteration: self.iteration,
            state,
            history: &self.history,
            turn_start: self.turn_start,
            usage: self.usage,
            created_at: self.created_at,
            completed: &self.completed,
        };
        if checkpoint::save(self.agent.task_store.as_ref(), &self.cx, snapshot).await {
            self.emit.checkpoint(self.iteration, self.history.len());
        }
    }

    async fn finish(self, ending: Ending) {
        let state = ending.end.state();
        self.checkpoint(state).await;
        self.shared.set_outcome(TurnOutcome {
            end: ending.end,
            state,
            message: ending.message.clone(),
            usage: self.usage,
            iterations: self.iteration,
            history: self.history.clone(),
            turn_start: self.turn_start,
        });
        self.emit.final_status(
            ending.end,
            ending.message,
            self.usage,
            self.iteration,
            ending.metadata,
        );
    }
}
