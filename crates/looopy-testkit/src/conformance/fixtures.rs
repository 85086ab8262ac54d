//! Values with every serde field set, so that a round trip that drops or
//! mangles one fails.

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use looopy_core::approval::ApprovalRequest;
use looopy_core::store::{AgentState, LastTurn, LifecycleState, StreamedAnswer, TaskCheckpoint};
use looopy_core::{
    AgentEvent, AgentTurnReport, Artifact, CutOutput, EventPayload, FailedToolCall, FileContent,
    FinishReason, History, Message, Part, ResultSource, Role, StatusMetadata, TaskState,
    TaskStatus, ToolCall, ToolFailure, ToolOutcome, ToolResult, ToolSignal, TurnEnd, TurnError,
    TurnReport, Usage,
};
use serde_json::{Map, Value, json};

/// Every task state.
pub(crate) const TASK_STATES: [TaskState; 9] = [
    TaskState::Submitted,
    TaskState::Working,
    TaskState::InputRequired,
    TaskState::Completed,
    TaskState::Canceled,
    TaskState::Failed,
    TaskState::Rejected,
    TaskState::AuthRequired,
    TaskState::Unknown,
];

/// Every lifecycle state.
pub(crate) const LIFECYCLES: [LifecycleState; 7] = [
    LifecycleState::Created,
    LifecycleState::Starting,
    LifecycleState::Ready,
    LifecycleState::Busy,
    LifecycleState::Paused,
    LifecycleState::Shutdown,
    LifecycleState::Failed,
];

/// A fixed instant with nanoseconds, `seconds` after 2026-01-01.
pub(crate) fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_767_225_600 + seconds, 123_456_789)
        .single()
        .unwrap_or_default()
}

/// A JSON object with nested values of every JSON type.
/// A turn report with every field set.
fn report() -> TurnReport {
    TurnReport {
        finish_reason: TurnEnd::ToolFailed,
        iterations: 7,
        usage: Usage {
            input_tokens: 11,
            output_tokens: 13,
            total_tokens: 24,
            reasoning_tokens: 2,
            cached_input_tokens: 5,
            cache_creation_input_tokens: 3,
        },
        error: Some(Box::new(TurnError::new(
            "tool_failed",
            "Tool 'x' failed: ✗",
        ))),
        failed_tool_call: Some(Box::new(FailedToolCall {
            name: "x".into(),
            call_id: "call-1".into(),
            failure: "error".into(),
        })),
        pending_tool_calls: vec![ToolCall::new("call-2", "ask", r#"{"q":"why"}"#)],
        approval_requests: vec![ApprovalRequest::new(
            &ToolCall::new("call-2", "ask", r#"{"q":"why"}"#),
            "Allow ask?",
        )],
        agent: Some(AgentTurnReport {
            turn_number: 3,
            saved: true,
            save_error: None,
            compaction: Some(json!({"originalCount": 5, "range": {"start": 0, "end": 5}})),
            compaction_error: Some("the summary was empty".into()),
        }),
    }
}

pub(crate) fn metadata(tag: &str) -> Map<String, Value> {
    let value = json!({
        "tag": tag,
        "unicode": "héllo ✓ 日本 🚀 \"quoted\" \\ \n newline",
        "int": -42,
        "big": 9_007_199_254_740_993_u64,
        "float": 0.25,
        "bool": true,
        "null": null,
        "array": [1, "two", {"three": 3.5}],
        "nested": {"deeper": {"key": [null, false]}},
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Every kind of part, each with every field set.
pub(crate) fn all_parts(tag: &str) -> Vec<Part> {
    vec![
        Part::text(format!("text {tag} ✓")),
        Part::data(json!({"tag": tag, "list": [1, 2.5, null], "flag": false})),
        Part::file(FileContent {
            blob: None,
            name: Some(format!("{tag}.png")),
            mime_type: Some("image/png".into()),
            uri: Some(format!("https://example.com/{tag}.png")),
            bytes: Some("iVBORw0KGgo=".into()),
        }),
        blob_part(tag),
    ]
}

/// A file part kept in a blob store: only its typed [`BlobRef`].
pub(crate) fn blob_part(tag: &str) -> Part {
    let key = looopy_core::BlobKey::from_segments([
        looopy_core::BlobKey::escape_segment(tag),
        "report.pdf".to_owned(),
    ])
    .unwrap_or_else(|e| panic!("conformance: a blob key of `{tag}`: {e}"));
    let blob = looopy_core::BlobRef {
        store: "files".into(),
        key,
        size: 5 << 20,
        media_type: "application/pdf".into(),
        sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
    };
    Part::file(FileContent::from_blob(blob, Some(format!("{tag}.pdf"))))
}

/// A message with every field set; the role cycles with `n`.
pub(crate) fn full_message(tag: &str, n: usize) -> Message {
    let roles = [Role::User, Role::Assistant, Role::Tool, Role::System];
    let mut meta = metadata(tag);
    meta.insert("n".into(), json!(n));
    let tool = roles[n % roles.len()] == Role::Tool;
    Message {
        message_id: format!("{tag}-msg-{n}"),
        role: roles[n % roles.len()],
        parts: all_parts(&format!("{tag}-{n}")),
        tool_calls: vec![
            ToolCall::new(format!("call-{n}-a"), "search", r#"{"q":"rust","n":3}"#),
            ToolCall::new(format!("call-{n}-b"), "raw", "not json {"),
        ],
        tool_call_id: Some(format!("call-{n}")),
        approval_requests: vec![ApprovalRequest::new(
            &ToolCall::new(format!("call-{n}-a"), "search", r#"{"q":"rust","n":3}"#),
            format!("{tag}: allow search?"),
        )],
        failure: tool.then_some(ToolFailure::Timeout),
        source: tool.then_some(ResultSource::Client),
        artifact_ids: vec![format!("{tag}-artifact-{n}")],
        cut_output: tool.then(|| {
            Box::new(CutOutput {
                artifact_id: format!("{tag}-output-{n}"),
                original_chars: 4096,
            })
        }),
        metadata: meta,
    }
}

/// A minimal message (optional fields empty), tagged in its metadata.
pub(crate) fn tagged_message(writer: usize, batch: usize, index: usize) -> Message {
    let mut m = Message::user(format!("w{writer} b{batch} i{index}"));
    m.metadata.insert("writer".into(), json!(writer));
    m.metadata.insert("batch".into(), json!(batch));
    m.metadata.insert("index".into(), json!(index));
    m
}

/// Reads back the `(writer, batch, index)` tag of [`tagged_message`].
pub(crate) fn tag_of(m: &Message) -> (u64, u64, u64) {
    let get = |k: &str| {
        m.metadata
            .get(k)
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX)
    };
    (get("writer"), get("batch"), get("index"))
}

/// Usage with every counter set.
pub(crate) fn full_usage(n: u64) -> Usage {
    Usage {
        input_tokens: 100 + n,
        output_tokens: 50 + n,
        total_tokens: 150 + 2 * n,
        reasoning_tokens: 7 + n,
        cached_input_tokens: 30 + n,
        cache_creation_input_tokens: 20 + n,
    }
}

/// A checkpoint with every field set and a history of `len` full messages.
pub(crate) fn full_checkpoint(
    task_id: &str,
    context_id: &str,
    state: TaskState,
    len: usize,
) -> TaskCheckpoint {
    let messages: History = (0..len).map(|n| full_message(task_id, n)).collect();
    TaskCheckpoint {
        task_id: task_id.into(),
        context_id: context_id.into(),
        agent_id: format!("agent-{task_id}").into(),
        iteration: 7,
        state,
        messages,
        turn_start: len / 2,
        usage: full_usage(3),
        completed_tool_results: vec![
            ToolResult {
                tool_call_id: format!("call-{task_id}"),
                content: all_parts("completed"),
                is_error: true,
                signal: Some(ToolSignal::Done {
                    message: Some("done".into()),
                }),
                metadata: metadata("completed"),
                failure: Some(ToolFailure::Interrupted),
                artifacts: vec![full_artifact("tool-made")],
                source: Some(ResultSource::Client),
                cut_output: Some(CutOutput {
                    artifact_id: format!("tool-output-{task_id}"),
                    original_chars: 12_345,
                }),
            },
            ToolResult::text("call-2", "plain"),
        ],
        streamed_answers: vec![StreamedAnswer {
            artifact_id: format!("{task_id}-response-7"),
            message: len.saturating_sub(1),
        }],
        stored_history: None,
        created_at: at(0),
        updated_at: at(61),
        metadata: metadata("checkpoint"),
    }
}

/// An artifact with every field set.
pub(crate) fn full_artifact(artifact_id: &str) -> Artifact {
    Artifact {
        artifact_id: artifact_id.to_owned(),
        name: Some(format!("name of {artifact_id}")),
        description: Some("a description ✓".into()),
        parts: all_parts(artifact_id),
        metadata: metadata(artifact_id),
    }
}

/// An agent state with every field set.
pub(crate) fn full_agent_state(
    context_id: &str,
    owner: Option<&str>,
    lifecycle: LifecycleState,
    last_activity: DateTime<Utc>,
) -> AgentState {
    AgentState {
        context_id: context_id.to_owned(),
        agent_id: format!("agent-{context_id}"),
        lifecycle,
        turn_count: 12,
        created_at: at(0),
        last_activity,
        owner: owner.map(str::to_owned),
        last_turn: Some(LastTurn {
            task_id: format!("task-{context_id}"),
            turn_number: 12,
            state: TaskState::Completed,
            finish_reason: "finished".into(),
            at: at(3),
        }),
        metadata: metadata(context_id),
    }
}

fn status(state: TaskState, tag: &str) -> TaskStatus {
    TaskStatus {
        state,
        message: Some(full_message(tag, 1).into()),
        timestamp: at(5),
    }
}

/// One event of every payload kind, every field set, ending with the final one.
/// (`EventPayload` is `#[non_exhaustive]`: add new kinds here.)
pub(crate) fn every_event(task_id: &str, context_id: &str) -> Vec<AgentEvent> {
    let call = ToolCall::new("call-1", "search", r#"{"q":"x"}"#);
    let payloads = vec![
        EventPayload::Task {
            status: status(TaskState::Submitted, "task"),
            metadata: metadata("task"),
        },
        EventPayload::StatusUpdate {
            status: status(TaskState::Working, "working"),
            is_final: false,
            metadata: StatusMetadata::entries(metadata("working")),
        },
        EventPayload::ArtifactUpdate {
            artifact: full_artifact("art-1"),
            append: true,
            last_chunk: false,
        },
        EventPayload::LlmCall {
            iteration: 1,
            message_count: 4,
            tool_count: 2,
        },
        EventPayload::LlmResponse {
            iteration: 1,
            finish_reason: FinishReason::Other("provider_specific".into()),
            tool_call_count: 1,
            usage: Some(full_usage(1)),
            duration_ms: 1234,
        },
        EventPayload::Reasoning {
            text: "thinking ✓".into(),
        },
        EventPayload::Text {
            text: "calling a tool".into(),
        },
        EventPayload::ToolStart {
            arguments: call.parsed_arguments(),
            call,
        },
        EventPayload::ToolComplete {
            name: "search".into(),
            result: ToolResult {
                tool_call_id: "call-1".into(),
                content: all_parts("result"),
                is_error: true,
                signal: Some(ToolSignal::Done {
                    message: Some("final words".into()),
                }),
                metadata: metadata("result"),
                failure: Some(ToolFailure::Timeout),
                artifacts: vec![full_artifact("chart")],
                source: Some(ResultSource::Synthetic),
                cut_output: None,
            },
            outcome: ToolOutcome::Timeout,
            duration_ms: 99,
        },
        EventPayload::ToolComplete {
            name: "client".into(),
            result: ToolResult::text("call-2", "ok").with_signal(ToolSignal::InputRequired),
            outcome: ToolOutcome::Success,
            duration_ms: 0,
        },
        EventPayload::Checkpoint {
            iteration: 1,
            message_count: 6,
        },
        EventPayload::Usage {
            call: full_usage(1),
            total: full_usage(2),
        },
        EventPayload::ExecutionStart { resumed: true },
        EventPayload::ExecutionPaused {
            reason: "review ✓".into(),
        },
        EventPayload::ExecutionResumed {},
        EventPayload::IterationStart { iteration: 2 },
        EventPayload::IterationComplete {
            iteration: 2,
            duration_ms: 77,
        },
        EventPayload::LlmError {
            iteration: 2,
            error_type: "rate_limited".into(),
            message: "slow down".into(),
        },
        EventPayload::ToolDetected {
            iteration: 2,
            calls: vec![
                ToolCall::new("call-3", "search", r#"{"q":"y"}"#),
                ToolCall::new("call-4", "raw", "not json"),
            ],
        },
        EventPayload::HookError {
            hook: "audit".into(),
            point: "before_llm".into(),
            message: "hook failed".into(),
            fatal: true,
        },
        EventPayload::ExecutionEnd {
            state: TaskState::Failed,
            reason: "error".into(),
            duration_ms: 4321,
            error: Some("boom".into()),
        },
        EventPayload::StatusUpdate {
            status: status(TaskState::Completed, "done"),
            is_final: true,
            metadata: StatusMetadata {
                report: Some(Box::new(report())),
                extra: metadata("done"),
            },
        },
    ];
    payloads
        .into_iter()
        .enumerate()
        .map(|(n, payload)| event_at(task_id, context_id, payload, n as i64))
        .collect()
}

/// An event with a fixed timestamp.
pub(crate) fn event_at(
    task_id: &str,
    context_id: &str,
    payload: EventPayload,
    seconds: i64,
) -> AgentEvent {
    AgentEvent {
        task_id: Arc::from(task_id),
        context_id: Arc::from(context_id),
        timestamp: at(seconds),
        payload: Box::new(payload),
    }
}

/// A non-final event carrying `n`.
pub(crate) fn numbered_event(task_id: &str, n: usize) -> AgentEvent {
    event_at(
        task_id,
        "ctx",
        EventPayload::Text {
            text: format!("event {n}"),
        },
        n as i64,
    )
}

/// The final event of a turn.
pub(crate) fn final_event(task_id: &str) -> AgentEvent {
    event_at(
        task_id,
        "ctx",
        EventPayload::StatusUpdate {
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: at(1000),
            },
            is_final: true,
            metadata: looopy_core::StatusMetadata::default(),
        },
        1000,
    )
}
