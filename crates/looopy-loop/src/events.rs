//! Every event a turn emits is built here, so that their shapes live in one place.

use std::sync::Arc;

use looopy_core::{
    AgentEvent, Artifact, EventPayload, FinishReason, Message, Part, StatusMetadata, TaskState,
    TaskStatus, ToolCall, ToolOutcome, ToolResult, TurnEnd, TurnReport, Usage,
};
use serde_json::Map;

use crate::interest::InternalEvents;
use crate::queue::EventQueue;

/// The artifact the model's text of task `task_id` streams to: that of
/// `iteration`, or, with `None`, that of the wrap-up call after a limit.
pub fn response_artifact_id(task_id: &str, iteration: Option<u32>) -> String {
    match iteration {
        Some(n) => format!("{task_id}-response-{n}"),
        None => format!("{task_id}-response-final"),
    }
}

/// Whether `artifact_id` is one the model's text of task `task_id` streamed
/// to ([`response_artifact_id`]: the answer, or what the model said beside
/// its tool calls), not an artifact a tool made.
pub fn is_response_artifact(task_id: &str, artifact_id: &str) -> bool {
    artifact_id
        .strip_prefix(task_id)
        .and_then(|rest| rest.strip_prefix("-response-"))
        .is_some_and(|rest| rest == "final" || rest.parse::<u32>().is_ok())
}

/// Sends a turn's events, stamped with its task and context.
#[derive(Clone)]
pub(crate) struct Emitter {
    queue: Arc<EventQueue>,
    task_id: Arc<str>,
    context_id: Arc<str>,
    /// The internal events this turn's readers use; the rest are not built.
    wanted: InternalEvents,
}

impl Emitter {
    pub(crate) fn new(
        queue: Arc<EventQueue>,
        task_id: Arc<str>,
        context_id: Arc<str>,
        wanted: InternalEvents,
    ) -> Self {
        Emitter {
            queue,
            task_id,
            context_id,
            wanted,
        }
    }

    /// Emits the internal event `payload` builds, when this turn's readers
    /// want events of `kind` (else it is never built).
    fn internal(&self, kind: InternalEvents, payload: impl FnOnce() -> EventPayload) {
        if self.wanted.contains(kind) {
            self.emit(payload());
        }
    }

    fn emit(&self, payload: EventPayload) {
        // A stream that went away dropped the turn with it; only the
        // checkpoint writer may still push, into a queue nobody reads.
        self.queue.push(AgentEvent::new(
            self.task_id.clone(),
            self.context_id.clone(),
            payload,
        ));
    }

    /// An event a tool adds to the turn (through `cx.events`). Internal
    /// kinds only: the turn's A2A events (its status, its artifacts) are
    /// the loop's to send.
    pub(crate) fn forward(&self, payload: EventPayload) {
        if payload.kind().starts_with("internal:") {
            self.internal(InternalEvents::FROM_TOOLS, || payload);
        } else {
            tracing::debug!(
                kind = payload.kind(),
                "a tool's A2A event is not added to the turn"
            );
        }
    }

    pub(crate) fn task_submitted(&self) {
        self.emit(EventPayload::Task {
            status: TaskStatus::new(TaskState::Submitted),
            metadata: Map::new(),
        });
    }

    pub(crate) fn status(&self, state: TaskState) {
        self.emit(EventPayload::StatusUpdate {
            status: TaskStatus::new(state),
            is_final: false,
            metadata: StatusMetadata::default(),
        });
    }

    pub(crate) fn final_status(&self, message: Option<Arc<Message>>, report: TurnReport) {
        let mut status = TaskStatus::new(report.finish_reason.state());
        status.message = message;
        self.emit(EventPayload::StatusUpdate {
            status,
            is_final: true,
            metadata: StatusMetadata::report(report),
        });
    }

    pub(crate) fn text_chunk(&self, artifact_id: &str, text: String, first: bool, last: bool) {
        self.emit(EventPayload::ArtifactUpdate {
            artifact: Artifact::new(artifact_id, vec![Part::text(text)]).with_name("response"),
            append: !first,
            last_chunk: last,
        });
    }

    pub(crate) fn llm_call(&self, iteration: u32, message_count: usize, tool_count: usize) {
        self.internal(InternalEvents::MODEL_CALLS, || EventPayload::LlmCall {
            iteration,
            message_count,
            tool_count,
        });
    }

    pub(crate) fn llm_response(
        &self,
        iteration: u32,
        finish_reason: FinishReason,
        tool_call_count: usize,
        usage: Option<Usage>,
        duration_ms: u64,
    ) {
        self.internal(InternalEvents::MODEL_CALLS, || EventPayload::LlmResponse {
            iteration,
            finish_reason,
            tool_call_count,
            usage,
            duration_ms,
        });
    }

    pub(crate) fn usage(&self, call: Usage, total: Usage) {
        self.internal(InternalEvents::USAGE, || EventPayload::Usage {
            call,
            total,
        });
    }

    pub(crate) fn reasoning(&self, text: String) {
        self.internal(InternalEvents::TEXT, || EventPayload::Reasoning { text });
    }

    pub(crate) fn text(&self, text: String) {
        self.internal(InternalEvents::TEXT, || EventPayload::Text { text });
    }

    pub(crate) fn tool_call_begin(&self, iteration: u32, index: usize, call_id: &str, name: &str) {
        self.internal(InternalEvents::TOOL_CALL_STREAM, || {
            EventPayload::ToolCallBegin {
                iteration,
                index,
                call_id: call_id.to_owned(),
                name: name.to_owned(),
            }
        });
    }

    pub(crate) fn tool_call_delta(
        &self,
        iteration: u32,
        index: usize,
        call: Option<&(String, String)>,
        delta: &str,
    ) {
        self.internal(InternalEvents::TOOL_CALL_STREAM, || {
            let (call_id, name) = call.cloned().unwrap_or_default();
            EventPayload::ToolCallArgumentsDelta {
                iteration,
                index,
                call_id,
                name,
                delta: delta.to_owned(),
            }
        });
    }

    /// The streamed calls of a complete answer: each one's whole arguments
    /// (`streamed`: the (id, name) the stream gave each call, by index).
    pub(crate) fn tool_calls_done(
        &self,
        iteration: u32,
        streamed: &[(String, String)],
        calls: &[ToolCall],
    ) {
        if streamed.is_empty() || !self.wanted.contains(InternalEvents::TOOL_CALL_DONE) {
            return;
        }
        for (index, call) in calls.iter().enumerate().take(streamed.len()) {
            let (call_id, name) = streamed[index].clone();
            self.emit(EventPayload::ToolCallArgumentsDone {
                iteration,
                index,
                call_id,
                name,
                arguments: call.arguments.clone(),
            });
        }
    }

    /// The turn reached `limit` (of value `max`) after `iteration`
    /// iterations.
    pub(crate) fn limit_reached(&self, limit: TurnEnd, max: u32, iteration: u32, message: &str) {
        self.internal(InternalEvents::LIMITS, || EventPayload::LimitReached {
            limit,
            max,
            iteration,
            message: message.to_owned(),
        });
    }

    pub(crate) fn tool_start(&self, call: &ToolCall) {
        self.internal(InternalEvents::TOOL_START, || EventPayload::ToolStart {
            call: call.clone(),
            arguments: call.parsed_arguments(),
        });
    }

    pub(crate) fn tool_complete(
        &self,
        name: &str,
        result: &ToolResult,
        outcome: ToolOutcome,
        duration_ms: u64,
    ) {
        self.internal(InternalEvents::TOOL_COMPLETE, || {
            EventPayload::ToolComplete {
                name: name.to_owned(),
                result: result.clone(),
                outcome,
                duration_ms,
            }
        });
    }

    pub(crate) fn tool_interrupted(&self, call: &ToolCall, retried: bool) {
        self.internal(InternalEvents::TOOL_INTERRUPTED, || {
            EventPayload::ToolInterrupted {
                name: call.name.clone(),
                call_id: call.id.clone(),
                retried,
            }
        });
    }

    pub(crate) fn checkpoint(&self, iteration: u32, message_count: usize) {
        self.internal(InternalEvents::CHECKPOINT, || EventPayload::Checkpoint {
            iteration,
            message_count,
        });
    }

    pub(crate) fn execution_start(&self, resumed: bool) {
        self.internal(InternalEvents::EXECUTION, || EventPayload::ExecutionStart {
            resumed,
        });
    }

    pub(crate) fn execution_end(&self, end: TurnEnd, duration_ms: u64, error: Option<String>) {
        self.internal(InternalEvents::EXECUTION, || EventPayload::ExecutionEnd {
            state: end.state(),
            reason: end.as_str().to_owned(),
            duration_ms,
            error,
        });
    }

    pub(crate) fn paused(&self, reason: String) {
        self.internal(InternalEvents::EXECUTION, || {
            EventPayload::ExecutionPaused { reason }
        });
    }

    pub(crate) fn resumed(&self) {
        self.internal(InternalEvents::EXECUTION, || {
            EventPayload::ExecutionResumed {}
        });
    }

    pub(crate) fn iteration_start(&self, iteration: u32) {
        self.internal(InternalEvents::ITERATIONS, || {
            EventPayload::IterationStart { iteration }
        });
    }

    pub(crate) fn iteration_complete(&self, iteration: u32, duration_ms: u64) {
        self.internal(InternalEvents::ITERATIONS, || {
            EventPayload::IterationComplete {
                iteration,
                duration_ms,
            }
        });
    }

    pub(crate) fn llm_error(&self, iteration: u32, error: &looopy_core::LlmError) {
        self.internal(InternalEvents::MODEL_CALLS, || EventPayload::LlmError {
            iteration,
            error_type: error.kind().to_owned(),
            message: error.to_string(),
        });
    }

    pub(crate) fn tool_detected(&self, iteration: u32, calls: &[ToolCall]) {
        self.internal(InternalEvents::TOOL_DETECTED, || {
            EventPayload::ToolDetected {
                iteration,
                calls: calls.to_vec(),
            }
        });
    }

    pub(crate) fn hook_error(&self, hook: &str, point: &str, message: &str, fatal: bool) {
        self.internal(InternalEvents::HOOK_ERRORS, || EventPayload::HookError {
            hook: hook.to_owned(),
            point: point.to_owned(),
            message: message.to_owned(),
            fatal,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_artifacts_are_told_from_other_artifacts() {
        for id in [
            response_artifact_id("t-1", Some(3)),
            response_artifact_id("t-1", None),
        ] {
            assert!(is_response_artifact("t-1", &id), "{id}");
            assert!(!is_response_artifact("t-2", &id), "another task's: {id}");
        }
        for made_by_a_tool in ["report", "t-1-response-", "t-1-response-x", "t-1"] {
            assert!(
                !is_response_artifact("t-1", made_by_a_tool),
                "{made_by_a_tool}"
            );
        }
    }
}
