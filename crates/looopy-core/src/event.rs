//! [`AgentEvent`]: what a turn emits.
//!
//! Three kinds are A2A events (`task`, `status-update`, `artifact-update`) and
//! may leave the process; every other kind is `internal:*`, for observers in
//! the process (tracing, UIs, tests) only. The A2A layer maps the public kinds
//! to the wire forms of each protocol version (see `docs/events.md`).
//!
//! The serde form is an envelope with `taskId`, `contextId`, `timestamp`, and
//! the payload's fields beside a `kind` tag:
//!
//! ```json
//! {"taskId":"t1","contextId":"c1","timestamp":"2026-01-01T00:00:00Z",
//!  "kind":"status-update","status":{"state":"working","timestamp":"..."},"final":false}
//! ```

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::llm::{FinishReason, Usage};
use crate::task::{Artifact, TaskState, TaskStatus};
use crate::tool::{ToolCall, ToolFailure, ToolResult};
use crate::turn_report::StatusMetadata;

/// One event of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    /// The task (turn) it belongs to.
    pub task_id: Arc<str>,
    /// The conversation.
    pub context_id: Arc<str>,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// What happened. Boxed so that an event is small to move and to
    /// queue: channels preallocate slots by the event's size, and a turn
    /// has two of them.
    #[serde(flatten)]
    pub payload: Box<EventPayload>,
}

impl AgentEvent {
    /// An event stamped now.
    pub fn new(task_id: Arc<str>, context_id: Arc<str>, payload: EventPayload) -> Self {
        AgentEvent {
            task_id,
            context_id,
            timestamp: Utc::now(),
            payload: Box::new(payload),
        }
    }

    /// The `kind` tag of the payload.
    pub fn kind(&self) -> &'static str {
        self.payload.kind()
    }

    /// Whether this event stays inside the process (never sent over A2A).
    pub fn is_internal(&self) -> bool {
        self.kind().starts_with("internal:")
    }

    /// Whether this is the last event of the turn (`status-update` with `final`).
    pub fn is_final(&self) -> bool {
        matches!(
            *self.payload,
            EventPayload::StatusUpdate { is_final: true, .. }
        )
    }

    /// The state this event reports, for `task` and `status-update` events.
    pub fn state(&self) -> Option<TaskState> {
        match &*self.payload {
            EventPayload::Task { status, .. } | EventPayload::StatusUpdate { status, .. } => {
                Some(status.state)
            }
            _ => None,
        }
    }
}

/// Whether a finished tool call succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolOutcome {
    /// It returned a result.
    Success,
    /// It returned an error result (any [`ToolFailure`] but a timeout).
    Error,
    /// It ran past its timeout ([`ToolFailure::Timeout`]).
    Timeout,
}

impl ToolOutcome {
    /// The outcome a result stands for: [`ToolOutcome::Timeout`] for a
    /// [`ToolFailure::Timeout`], [`ToolOutcome::Error`] for any other
    /// failure (or `is_error` without a kind), else success.
    pub fn of(result: &ToolResult) -> Self {
        match result.failure {
            Some(ToolFailure::Timeout) => ToolOutcome::Timeout,
            Some(_) => ToolOutcome::Error,
            None if result.is_error => ToolOutcome::Error,
            None => ToolOutcome::Success,
        }
    }
}

/// Which size limit of a conversation's history was passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum HistoryLimit {
    /// The number of messages.
    Messages,
    /// The estimated tokens.
    Tokens,
}

/// The payload of an [`AgentEvent`], tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
#[non_exhaustive]
pub enum EventPayload {
    /// A2A: the task exists (first event of a turn, state `submitted`).
    #[serde(rename = "task")]
    Task {
        /// Its status.
        status: TaskStatus,
        /// Metadata.
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        metadata: Map<String, Value>,
    },
    /// A2A: the task's state changed. The last event of a turn has `final: true`.
    #[serde(rename = "status-update", rename_all = "camelCase")]
    StatusUpdate {
        /// The new status.
        status: TaskStatus,
        /// Whether the turn ended.
        #[serde(rename = "final")]
        is_final: bool,
        /// Metadata: the final event of a turn carries its
        /// [`TurnReport`](crate::TurnReport) (on the wire `finishReason`,
        /// `iterations`, `usage` ...), beside free-form entries.
        #[serde(default, skip_serializing_if = "StatusMetadata::is_empty")]
        metadata: StatusMetadata,
    },
    /// A2A: an artifact was created or grew (streamed text arrives this way).
    #[serde(rename = "artifact-update", rename_all = "camelCase")]
    ArtifactUpdate {
        /// The artifact, holding only the new parts when `append` is true.
        artifact: Artifact,
        /// Whether the parts extend an artifact sent before.
        append: bool,
        /// Whether this is the artifact's last chunk.
        last_chunk: bool,
    },
    /// A model call is about to start.
    #[serde(rename = "internal:llm-call", rename_all = "camelCase")]
    LlmCall {
        /// 1-based iteration.
        iteration: u32,
        /// Messages sent (history, without the system prompt).
        message_count: usize,
        /// Tools offered.
        tool_count: usize,
    },
    /// A model call returned.
    #[serde(rename = "internal:llm-response", rename_all = "camelCase")]
    LlmResponse {
        /// 1-based iteration.
        iteration: u32,
        /// Why the model stopped.
        finish_reason: FinishReason,
        /// Tool calls requested.
        tool_call_count: usize,
        /// Tokens of this call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Wall time of the call in milliseconds.
        duration_ms: u64,
    },
    /// Reasoning text of the model.
    #[serde(rename = "internal:reasoning")]
    Reasoning {
        /// The text.
        text: String,
    },
    /// Assistant text of an iteration that also called tools (the final
    /// answer arrives in the final status instead).
    #[serde(rename = "internal:text")]
    Text {
        /// The text.
        text: String,
    },
    /// The model began a tool call in its streamed answer (its arguments
    /// follow as `internal:tool-call-delta` events). Only when streaming;
    /// the call runs later, announced by `internal:tool-start`.
    #[serde(rename = "internal:tool-call-begin", rename_all = "camelCase")]
    ToolCallBegin {
        /// 1-based iteration.
        iteration: u32,
        /// Position of the call in the model's answer.
        index: usize,
        /// The call's id as the model sent it (may be empty when the
        /// provider sends none; the loop then gives the call an id before it
        /// runs).
        call_id: String,
        /// The tool's name.
        name: String,
    },
    /// A piece of a tool call's raw JSON arguments, as the model streams
    /// them. Only when streaming; the pieces of one call, joined in order,
    /// are its arguments.
    #[serde(rename = "internal:tool-call-delta", rename_all = "camelCase")]
    ToolCallArgumentsDelta {
        /// 1-based iteration.
        iteration: u32,
        /// Position of the call in the model's answer.
        index: usize,
        /// The call's id as the model sent it (see `ToolCallBegin`).
        call_id: String,
        /// The tool's name.
        name: String,
        /// The next piece of the arguments.
        delta: String,
    },
    /// The model finished writing a tool call in its streamed answer: the
    /// call's whole arguments, once per call, after its last
    /// `internal:tool-call-delta` and before it runs (`internal:tool-start`).
    /// Only when streaming.
    #[serde(rename = "internal:tool-call-done", rename_all = "camelCase")]
    ToolCallArgumentsDone {
        /// 1-based iteration.
        iteration: u32,
        /// Position of the call in the model's answer.
        index: usize,
        /// The call's id as the model sent it (see `ToolCallBegin`).
        call_id: String,
        /// The tool's name.
        name: String,
        /// The raw JSON arguments: the call's deltas joined.
        arguments: String,
    },
    /// The turn reached one of its limits (`max_iterations`,
    /// `max_tool_calls`): it makes its wrap-up call without tools next.
    /// A warning: the model was still calling tools.
    #[serde(rename = "internal:limit-reached", rename_all = "camelCase")]
    LimitReached {
        /// Which limit: [`TurnEnd::MaxIterations`](crate::TurnEnd::MaxIterations) or
        /// [`TurnEnd::MaxToolCalls`](crate::TurnEnd::MaxToolCalls).
        limit: crate::TurnEnd,
        /// Its value.
        max: u32,
        /// Iterations made.
        iteration: u32,
        /// What happened, for a person.
        message: String,
    },
    /// A tool call starts.
    #[serde(rename = "internal:tool-start", rename_all = "camelCase")]
    ToolStart {
        /// The call as the model sent it.
        call: ToolCall,
        /// Its arguments as JSON (`{"_raw": ...}` when they are not JSON).
        arguments: Value,
    },
    /// A tool call finished.
    #[serde(rename = "internal:tool-complete", rename_all = "camelCase")]
    ToolComplete {
        /// The tool's name.
        name: String,
        /// The result the model will see; a failed call's kind is its
        /// `failure`.
        result: ToolResult,
        /// How it ended ([`ToolOutcome::of`] the result).
        outcome: ToolOutcome,
        /// Wall time in milliseconds.
        duration_ms: u64,
    },
    /// A resumed turn found a tool call that was in flight when the process
    /// running the turn stopped (no result recorded). Emitted once per such
    /// call, before anything else happens to it: when `retried`, the tool is
    /// idempotent and the call runs again (its `internal:tool-start` and
    /// `internal:tool-complete` follow); otherwise it is not run, and its
    /// `internal:tool-complete` follows at once with the error result the
    /// model gets ([`ToolResult::interrupted()`]).
    #[serde(rename = "internal:tool-interrupted", rename_all = "camelCase")]
    ToolInterrupted {
        /// The tool's name.
        name: String,
        /// The call's id (its idempotency key).
        call_id: String,
        /// Whether the call runs again.
        retried: bool,
    },
    /// Loop state was persisted.
    #[serde(rename = "internal:checkpoint", rename_all = "camelCase")]
    Checkpoint {
        /// The iteration the checkpoint was taken in (0 = before the first).
        iteration: u32,
        /// Messages in the checkpoint.
        message_count: usize,
    },
    /// The turn's execution began.
    #[serde(rename = "internal:execution-start", rename_all = "camelCase")]
    ExecutionStart {
        /// Whether it continues from a checkpoint.
        resumed: bool,
    },
    /// The turn ended; the final `status-update` follows.
    #[serde(rename = "internal:execution-end", rename_all = "camelCase")]
    ExecutionEnd {
        /// The final state.
        state: TaskState,
        /// Why it ended (`finished`, `done_tool`, `max_iterations`, ...).
        reason: String,
        /// Wall time of the turn in milliseconds.
        duration_ms: u64,
        /// The error, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The turn paused before its next model or tool call.
    #[serde(rename = "internal:execution-paused")]
    ExecutionPaused {
        /// Why.
        reason: String,
    },
    /// A paused turn goes on.
    #[serde(rename = "internal:execution-resumed")]
    ExecutionResumed {},
    /// An iteration begins.
    #[serde(rename = "internal:iteration-start")]
    IterationStart {
        /// 1-based iteration.
        iteration: u32,
    },
    /// An iteration ended (its model call and tool calls are done).
    #[serde(rename = "internal:iteration-complete", rename_all = "camelCase")]
    IterationComplete {
        /// 1-based iteration.
        iteration: u32,
        /// Wall time in milliseconds.
        duration_ms: u64,
    },
    /// A model call failed.
    #[serde(rename = "internal:llm-error", rename_all = "camelCase")]
    LlmError {
        /// 1-based iteration.
        iteration: u32,
        /// The error's kind (`rate_limited`, `timeout`, ...).
        error_type: String,
        /// The error's message.
        message: String,
    },
    /// The model asked for tool calls.
    #[serde(rename = "internal:tool-detected")]
    ToolDetected {
        /// 1-based iteration.
        iteration: u32,
        /// The calls.
        calls: Vec<ToolCall>,
    },
    /// A hook failed.
    #[serde(rename = "internal:hook-error", rename_all = "camelCase")]
    HookError {
        /// The hook's name.
        hook: String,
        /// Where it ran (`before_llm`, `after_tool`, ...).
        point: String,
        /// What went wrong.
        message: String,
        /// Whether the failure ended the turn.
        fatal: bool,
    },
    /// The conversation's history passed a configured size while automatic
    /// compaction is off: it keeps growing, and every model call sends
    /// more. Emitted once each time a limit is passed (again only after the
    /// history fell back below it, e.g. after a manual compaction).
    #[serde(rename = "internal:history-size", rename_all = "camelCase")]
    HistorySize {
        /// The limit passed.
        limit: HistoryLimit,
        /// Its configured value.
        threshold: usize,
        /// The history's size by that measure.
        size: usize,
    },
    /// An event of a sub-agent: a remote agent that a tool call of this
    /// turn talks to, its events namespaced by `path`.
    #[serde(rename = "internal:sub-agent", rename_all = "camelCase")]
    SubAgent {
        /// `<this turn's task id>/<the remote task id>`.
        path: String,
        /// The tool that called it.
        tool: String,
        /// The tool call.
        call_id: String,
        /// The remote agent's event, as it sent it.
        event: Box<AgentEvent>,
    },
    /// A running tool said how far it got: an MCP server's
    /// `notifications/progress` for the call, for one.
    #[serde(rename = "internal:tool-report", rename_all = "camelCase")]
    ToolReport {
        /// The tool call.
        call_id: String,
        /// The tool.
        tool: String,
        /// How far it got, in the tool's own units (it only grows).
        progress: f64,
        /// The progress at which it is done, when the tool knows.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What it is doing, for people.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A model call or a tool call was answered from a response cache
    /// (`LlmCacheLayer`, `ToolCacheLayer`) instead of running.
    #[serde(rename = "internal:cache-hit", rename_all = "camelCase")]
    CacheHit {
        /// Which cache.
        cache: crate::cache::CacheKind,
        /// The tool call answered (tool cache hits only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    /// Token usage of one model call, and the turn's running total.
    #[serde(rename = "internal:usage")]
    Usage {
        /// This call.
        call: Usage,
        /// The turn so far.
        total: Usage,
    },
}

impl EventPayload {
    /// The `kind` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            EventPayload::Task { .. } => "task",
            EventPayload::StatusUpdate { .. } => "status-update",
            EventPayload::ArtifactUpdate { .. } => "artifact-update",
            EventPayload::LlmCall { .. } => "internal:llm-call",
            EventPayload::LlmResponse { .. } => "internal:llm-response",
            EventPayload::Reasoning { .. } => "internal:reasoning",
            EventPayload::Text { .. } => "internal:text",
            EventPayload::ToolCallBegin { .. } => "internal:tool-call-begin",
            EventPayload::ToolCallArgumentsDelta { .. } => "internal:tool-call-delta",
            EventPayload::ToolCallArgumentsDone { .. } => "internal:tool-call-done",
            EventPayload::LimitReached { .. } => "internal:limit-reached",
            EventPayload::ToolStart { .. } => "internal:tool-start",
            EventPayload::ToolComplete { .. } => "internal:tool-complete",
            EventPayload::ToolInterrupted { .. } => "internal:tool-interrupted",
            EventPayload::Checkpoint { .. } => "internal:checkpoint",
            EventPayload::Usage { .. } => "internal:usage",
            EventPayload::SubAgent { .. } => "internal:sub-agent",
            EventPayload::ToolReport { .. } => "internal:tool-report",
            EventPayload::CacheHit { .. } => "internal:cache-hit",
            EventPayload::HistorySize { .. } => "internal:history-size",
            EventPayload::ExecutionStart { .. } => "internal:execution-start",
            EventPayload::ExecutionEnd { .. } => "internal:execution-end",
            EventPayload::ExecutionPaused { .. } => "internal:execution-paused",
            EventPayload::ExecutionResumed {} => "internal:execution-resumed",
            EventPayload::IterationStart { .. } => "internal:iteration-start",
            EventPayload::IterationComplete { .. } => "internal:iteration-complete",
            EventPayload::LlmError { .. } => "internal:llm-error",
            EventPayload::ToolDetected { .. } => "internal:tool-detected",
            EventPayload::HookError { .. } => "internal:hook-error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_serializes_flat_with_kind() {
        let e = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::Working),
                is_final: false,
                metadata: crate::StatusMetadata::default(),
            },
        );
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], "status-update");
        assert_eq!(v["taskId"], "t");
        assert_eq!(v["final"], false);
        assert_eq!(v["status"]["state"], "working");
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
        assert!(!e.is_internal());
        assert!(!e.is_final());
    }

    #[test]
    fn every_catalogue_event_round_trips_with_its_kind() {
        let payloads = vec![
            EventPayload::ExecutionStart { resumed: false },
            EventPayload::ExecutionEnd {
                state: TaskState::Failed,
                reason: "error".into(),
                duration_ms: 3,
                error: Some("x".into()),
            },
            EventPayload::ExecutionPaused {
                reason: "review".into(),
            },
            EventPayload::ExecutionResumed {},
            EventPayload::IterationStart { iteration: 1 },
            EventPayload::IterationComplete {
                iteration: 1,
                duration_ms: 2,
            },
            EventPayload::LlmError {
                iteration: 1,
                error_type: "timeout".into(),
                message: "m".into(),
            },
            EventPayload::ToolDetected {
                iteration: 1,
                calls: vec![ToolCall::new("1", "t", "{}")],
            },
            EventPayload::HookError {
                hook: "h".into(),
                point: "before_llm".into(),
                message: "m".into(),
                fatal: true,
            },
            EventPayload::ToolCallBegin {
                iteration: 1,
                index: 0,
                call_id: "c1".into(),
                name: "t".into(),
            },
            EventPayload::ToolCallArgumentsDelta {
                iteration: 1,
                index: 0,
                call_id: "c1".into(),
                name: "t".into(),
                delta: "{\"a\":".into(),
            },
            EventPayload::SubAgent {
                path: "t/remote-1".into(),
                tool: "weather_agent".into(),
                call_id: "c1".into(),
                event: Box::new(AgentEvent::new(
                    "remote-1".into(),
                    "rc".into(),
                    EventPayload::StatusUpdate {
                        status: TaskStatus::new(TaskState::Working),
                        is_final: false,
                        metadata: crate::StatusMetadata::default(),
                    },
                )),
            },
            EventPayload::HistorySize {
                limit: HistoryLimit::Tokens,
                threshold: 10,
                size: 12,
            },
            EventPayload::ToolInterrupted {
                name: "send_mail".into(),
                call_id: "c1".into(),
                retried: false,
            },
        ];
        for p in payloads {
            let kind = p.kind();
            let e = AgentEvent::new("t".into(), "c".into(), p);
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(v["kind"], kind);
            assert!(e.is_internal());
            assert_eq!(serde_json::from_value::<AgentEvent>(v).unwrap(), e);
        }
    }

    #[test]
    fn internal_events_are_marked() {
        let e = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::Checkpoint {
                iteration: 1,
                message_count: 2,
            },
        );
        assert!(e.is_internal());
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], "internal:checkpoint");
        assert_eq!(serde_json::from_value::<AgentEvent>(v).unwrap(), e);
    }
}
