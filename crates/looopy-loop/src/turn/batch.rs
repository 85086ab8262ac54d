//! A turn's tool calls: one batch per model response, run in parallel up
//! to the loop's limit, and the `input-required` end for calls that wait
//! on the client or on a person.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use looopy_core::approval::{ApprovalRequest, input_required_part};
use looopy_core::elicitation::ElicitationRequest;
use looopy_core::{
    FailedToolCall, History, Message, Part, Role, TaskState, ToolCall, ToolFailure, ToolOutcome,
    ToolResult, ToolSignal, TurnEnd, WhenCancelled,
};
use tracing::Instrument;

use super::{Ending, Step, Turn};
use crate::config::ToolFailureMode;
use crate::tools::{self, CallEnv, ToolRegistry};

impl Turn {
    /// Runs the pending calls of the last assistant message, appends every
    /// result of that message in the model's order, and reads their signals.
    /// `approved`: a person approved these calls (the approval hooks do
    /// not run again).
    pub(super) async fn run_tools(
        &mut self,
        registry: &ToolRegistry,
        mut calls: Vec<(usize, ToolCall)>,
        approved: bool,
    ) -> Step {
        let limit = self.config.max_parallel_tools.max(1);
        if let Some(max) = self.config.max_tool_calls {
            // Calls past the turn's limit are not run; each gets a denied
            // result, and the next iteration wraps the turn up.
            let left = max.saturating_sub(self.tool_calls) as usize;
            if calls.len() > left {
                for (_, call) in calls.split_off(left) {
                    let result = ToolResult::failed(
                        &call.id,
                        ToolFailure::Denied,
                        format!("Not run: this turn's limit of {max} tool calls was reached."),
                    );
                    self.emit
                        .tool_complete(&call.name, &result, ToolOutcome::of(&result), 0);
                    self.completed.push(result);
                }
            }
        }
        self.tool_calls = self
            .tool_calls
            .saturating_add(u32::try_from(calls.len()).unwrap_or(u32::MAX));
        // Identical calls of an idempotent tool run once (see `twins`).
        let all_calls = calls.clone();
        let (calls, mut twins) = identical_calls(registry, calls);
        let fail_fast = self.config.tool_failure_mode == ToolFailureMode::Fail;
        let mut tool_failed: Option<Ending> = None;
        let cx = self.cx.clone();
        let emit = self.emit.clone();
        let hooks = self.parts.hooks.clone();
        let shared = self.shared.clone();
        let running_calls = tools::Running::default();
        let env = CallEnv {
            running: &running_calls,
            registry,
            cx: &cx,
            emit: &emit,
            hooks: &hooks,
            pause: &shared.pause,
            iteration: self.iteration,
            metrics: &self.parts.metrics,
            approved,
        };
        let span = tracing::info_span!(
            "tools",
            otel.name = "execute_tools",
            looopy.tool_count = calls.len()
        );
        // Each call's span is made inside the batch span, so that parallel
        // calls nest under it whatever task polls them.
        let futures = span.in_scope(|| tools::call_futures(&env, &calls));
        let mut running = futures::stream::iter(futures).buffer_unordered(limit);
        let mut fatal = None;
        let mut asked: HashMap<String, String> = HashMap::new();
        // One wait for the whole batch, polled again at each result.
        let mut cancel = WhenCancelled::new(&cx.cancel);
        let cancelled = loop {
            let next = tokio::select! {
                biased;
                () = &mut cancel => break true,
                next = running.next().instrument(span.clone()) => next,
            };
            let Some(f) = next else { break false };
            running_calls.finish(&f.call.id);
            emit.tool_complete(&f.call.name, &f.result, f.outcome, f.duration_ms);
            if fatal.is_none() {
                fatal = f.fatal;
            }
            if let Some(question) = f.asked {
                asked.insert(f.call.id.clone(), question);
            }
            let failed = fail_fast
                && f.outcome != ToolOutcome::Success
                && f.result.failure != Some(ToolFailure::Cancelled);
            if failed {
                tool_failed = Some(tool_failure(&f.call, &f.result));
            }
            for twin in twins.remove(&f.call.id).unwrap_or_default() {
                // The same call again: the same result, under its own id.
                let mut result = f.result.clone();
                result.tool_call_id.clone_from(&twin.id);
                emit.tool_complete(&twin.name, &result, f.outcome, f.duration_ms);
                if let Some(question) = asked.get(&f.call.id).cloned() {
                    asked.insert(twin.id.clone(), question);
                }
                self.completed.push(result);
            }
            self.completed.push(f.result);
            self.checkpoint(TaskState::Working);
            if failed {
                break false;
            }
        };
        drop(running);
        if tool_failed.is_some() {
            // The batch's other calls stop as at a cancel; the Agent closes them.
            running_calls.cancel_all(&emit);
        }
        if cancelled {
            running_calls.cancel_all(&emit);
            // `completed` stays in the checkpoint: a resume does not run those again.
            return Step::End(Ending::new(TurnEnd::Cancelled, None));
        }
        let mut results = std::mem::take(&mut self.completed);
        // Order every result of the assistant message as the model asked.
        let order: Vec<String> = self
            .last_assistant()
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
        let mut questions: Vec<ElicitationRequest> = Vec::new();
        for result in results {
            match &result.signal {
                Some(ToolSignal::InputRequired) => {
                    questions.extend(ElicitationRequest::from_result(&result));
                    if let Some((_, call)) =
                        all_calls.iter().find(|(_, c)| c.id == result.tool_call_id)
                    {
                        waiting.push(call.clone());
                    }
                    continue;
                }
                Some(ToolSignal::Done { message }) => done = Some(message.clone()),
                // A signal this loop does not know: the result feeds the model.
                _ => {}
            }
            self.push(result.into_message());
        }
        if let Some(f) = fatal {
            return Step::End(Ending::hook(f));
        }
        if let Some(ending) = tool_failed {
            return Step::End(ending);
        }
        if !waiting.is_empty() {
            return Step::End(self.input_required(waiting, &asked, questions));
        }
        if let Some(message) = done {
            let text = message
                .unwrap_or_else(|| self.last_assistant().map(Message::text).unwrap_or_default());
            let answer = Arc::new(Message::assistant(text));
            self.push(answer.clone());
            return Step::End(Ending::new(TurnEnd::DoneTool, Some(answer)));
        }
        Step::Continue
    }

    /// The `input-required` end: the calls waiting for the client, those
    /// waiting for a person's approval (`asked`: their questions, by call
    /// id), which are also recorded on the assistant message that made
    /// them, so that they are stored with the conversation, and those
    /// whose tools asked a question (`questions`, see
    /// `looopy_core::elicitation`).
    pub(super) fn input_required(
        &mut self,
        waiting: Vec<ToolCall>,
        asked: &HashMap<String, String>,
        questions: Vec<ElicitationRequest>,
    ) -> Ending {
        let requests: Vec<ApprovalRequest> = waiting
            .iter()
            .filter_map(|c| {
                asked
                    .get(&c.id)
                    .map(|q| ApprovalRequest::new(c, q.as_str()))
            })
            .collect();
        let client: Vec<&str> = waiting
            .iter()
            .filter(|c| {
                !asked.contains_key(&c.id) && !questions.iter().any(|q| q.tool_call_id == c.id)
            })
            .map(|c| c.name.as_str())
            .collect();
        let mut lines: Vec<String> = requests.iter().map(|r| r.question.clone()).collect();
        for q in &questions {
            lines.push(match &q.error {
                Some(error) => format!(
                    "{} asks: {} (the last answer did not fit: {error})",
                    q.tool, q.message
                ),
                None => format!("{} asks: {}", q.tool, q.message),
            });
        }
        if !client.is_empty() {
            lines.push(format!(
                "Waiting for the client to run: {}",
                client.join(", ")
            ));
        }
        if !requests.is_empty() {
            self.record_requests(&requests);
        }
        let mut message = Message::with_parts(
            Role::Assistant,
            vec![
                Part::text(lines.join("\n")),
                input_required_part(&waiting, &requests, &questions),
            ],
        );
        message.tool_calls = waiting.clone();
        let mut ending = Ending::new(TurnEnd::InputRequired, Some(Arc::new(message)));
        ending.pending_tool_calls = waiting;
        ending.approval_requests = requests;
        ending
    }

    /// Records approval requests on the turn's last assistant message.
    fn record_requests(&mut self, requests: &[ApprovalRequest]) {
        let Some(position) = self
            .history
            .iter()
            .enumerate()
            .skip(self.turn_start)
            .rev()
            .find(|(_, m)| m.role == Role::Assistant)
            .map(|(i, _)| i)
        else {
            return;
        };
        let mut history = History::new();
        for (i, m) in self.history.iter_from(0).enumerate() {
            if i == position {
                let mut marked = Message::clone(m);
                ApprovalRequest::record(&mut marked, requests);
                history.push(marked);
            } else {
                history.push_shared(m.clone());
            }
        }
        self.history = history;
        self.shared.set_history(self.history.clone());
    }

    /// Waits until the checkpoint that holds `calls` is saved when one of
    /// them is for a tool that is not idempotent. At most once needs the
    /// call on record before it runs: a resume that cannot see the call
    /// would ask the model again and run the tool a second time. Idempotent
    /// calls keep overlapping the save.
    pub(super) async fn record_before_side_effects(
        &self,
        registry: &ToolRegistry,
        calls: &[ToolCall],
    ) {
        if calls.iter().any(|c| !registry.is_idempotent(&c.name)) {
            self.writer.flush().await;
        }
    }
}

/// The repeats of each call that runs, by the id of the one that runs.
type Twins = HashMap<String, Vec<ToolCall>>;

/// Calls of one model response that are the same call again: the same
/// idempotent tool (`ToolDefinition::idempotent`: running it twice does
/// what running it once does) with the same arguments, compared as JSON
/// (so spacing and key order do not matter). Only the first of each runs;
/// the others, by the id of the one that runs, get its result under their
/// own call ids (`docs/behaviour.md#identical-calls-in-one-response`).
fn identical_calls(
    registry: &ToolRegistry,
    calls: Vec<(usize, ToolCall)>,
) -> (Vec<(usize, ToolCall)>, Twins) {
    let mut twins = Twins::new();
    if calls.len() < 2 {
        return (calls, twins);
    }
    let mut run: Vec<(usize, ToolCall)> = Vec::with_capacity(calls.len());
    let mut seen: Vec<(usize, serde_json::Value)> = Vec::new();
    for (position, call) in calls {
        if !registry.is_idempotent(&call.name) {
            run.push((position, call));
            continue;
        }
        let arguments = call.parsed_arguments();
        let first = seen
            .iter()
            .find(|(i, a)| run[*i].1.name == call.name && *a == arguments)
            .map(|(i, _)| run[*i].1.id.clone());
        match first {
            Some(id) => {
                tracing::debug!(tool = %call.name, call_id = %call.id, same_as = %id,
                    "an identical call of the same response runs once");
                twins.entry(id).or_default().push(call);
            }
            None => {
                seen.push((run.len(), arguments));
                run.push((position, call));
            }
        }
    }
    (run, twins)
}

/// The end of a turn whose tool call failed under [`ToolFailureMode::Fail`].
fn tool_failure(call: &ToolCall, result: &ToolResult) -> Ending {
    let kind = result.failure.unwrap_or(ToolFailure::Failed);
    let mut ending = Ending::failed_as(
        TurnEnd::ToolFailed,
        format!(
            "Tool '{}' failed ({}): {}",
            call.name,
            kind.as_str(),
            result.text_content()
        ),
        "tool_failed",
    );
    ending.failed_tool_call = Some(FailedToolCall {
        name: call.name.clone(),
        call_id: call.id.clone(),
        failure: kind.as_str().to_owned(),
    });
    ending
}
