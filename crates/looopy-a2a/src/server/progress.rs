//! The tool-progress extension ([`TOOL_PROGRESS_EXTENSION`]): a client that
//! activates it (header `A2A-Extensions`) also gets, in its streams, `working`
//! status updates whose message holds one data part describing the turn's
//! progress: its trace id, each tool call as it starts and ends, and token
//! usage after each model call, as a [`ToolProgress`] (its JSON Schema:
//! `docs/tool-progress.schema.json`). Clients that do not activate it never
//! see them.
//!
//! For a turn whose streaming request (`SendStreamingMessage`,
//! `message/stream`) activated the extension, the server turns the
//! runner's `internal:tool-call-begin`, `internal:tool-call-delta` (a
//! streamed call's arguments as the model writes them),
//! `internal:tool-start`, `internal:tool-complete` and `internal:usage`
//! events into such status updates and appends them to the event log with
//! the turn's other events (so that `SubscribeToTask` with or without
//! `Last-Event-ID` replays them); each stream filters them out unless its
//! request activated the extension. A turn started without it (or by
//! `SendMessage`) builds and logs none: a later subscription with the
//! extension sees that turn's public events only. A turn recovered from a
//! process that died logs them whenever the server offers the extension
//! (its request is gone). They are marked by the extension's URI as a key
//! of the status update's `metadata`.

use std::sync::Arc;

use axum::http::HeaderMap;
use looopy_core::{
    AgentEvent, EventPayload, Message, Part, Role, StatusMetadata, TaskState, TaskStatus,
    ToolOutcome, ToolResult,
};
use serde_json::{Map, Value, json};

use crate::tool_progress::ToolProgress;

/// The URI of the tool-progress extension, as listed in the agent card's
/// `capabilities.extensions` and requested in the `A2A-Extensions` header.
pub const TOOL_PROGRESS_EXTENSION: &str = "https://looopy.dev/extensions/tool-progress/v1";

/// The header a client lists the extensions it activates in (spec 1.0
/// §3.2.6); the server echoes the ones it activated.
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";

/// The 0.3 name of [`EXTENSIONS_HEADER`], also accepted.
pub(crate) const LEGACY_EXTENSIONS_HEADER: &str = "X-A2A-Extensions";

/// What the agent card says about the extension.
pub(crate) const DESCRIPTION: &str = "Streams tool calls (as the model writes them: id, name, \
     argument pieces; start: id, name, arguments; end: \
     result, isError, outcome, failure, durationMs), token usage and the turn's trace id as working status \
     updates with a data part.";

/// Longest tool result or argument text sent, in characters.
const MAX_TEXT: usize = 2000;

/// The extensions a request asks for, from both header names (each a
/// comma-separated list; the header may repeat).
fn requested_uris(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    [EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER]
        .into_iter()
        .flat_map(|name| headers.get_all(name))
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
}

/// Whether the request activates the extension.
pub(crate) fn requested(headers: &HeaderMap) -> bool {
    requested_uris(headers).any(|uri| uri == TOOL_PROGRESS_EXTENSION)
}

/// Whether the request used the 0.3 header name.
pub(crate) fn uses_legacy_header(headers: &HeaderMap) -> bool {
    headers.contains_key(LEGACY_EXTENSIONS_HEADER)
}

/// Whether a logged event is a progress update (sent only to clients that
/// activated the extension).
pub(crate) fn is_progress(event: &AgentEvent) -> bool {
    matches!(
        &*event.payload,
        EventPayload::StatusUpdate { metadata, is_final: false, .. }
            if metadata.extra.contains_key(TOOL_PROGRESS_EXTENSION)
    )
}

/// The progress update an internal event becomes, if it is one the
/// extension reports.
pub(crate) fn from_internal(event: &AgentEvent) -> Option<AgentEvent> {
    let progress = match &*event.payload {
        EventPayload::ToolStart { call, arguments } => ToolProgress::ToolStart {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: clip_value(arguments),
        },
        EventPayload::ToolComplete {
            name,
            result,
            outcome,
            duration_ms,
        } => {
            let (text, truncated) = clip(&result_text(result));
            ToolProgress::ToolComplete {
                call_id: result.tool_call_id.clone(),
                name: name.clone(),
                result: text,
                truncated,
                is_error: result.is_error || *outcome != ToolOutcome::Success,
                outcome: *outcome,
                failure: result.failure,
                duration_ms: *duration_ms,
            }
        }
        EventPayload::ToolCallBegin {
            index,
            call_id,
            name,
            ..
        } => ToolProgress::ToolCallBegin {
            call_id: call_id.clone(),
            name: name.clone(),
            index: *index,
        },
        EventPayload::ToolCallArgumentsDelta {
            index,
            call_id,
            name,
            delta,
            ..
        } => ToolProgress::ToolCallDelta {
            call_id: call_id.clone(),
            name: name.clone(),
            index: *index,
            delta: delta.clone(),
        },
        EventPayload::SubAgent {
            path,
            tool,
            call_id,
            event,
        } => ToolProgress::SubAgent {
            path: path.clone(),
            name: tool.clone(),
            call_id: call_id.clone(),
            update: event.clone(),
        },
        EventPayload::ToolReport {
            call_id,
            tool,
            progress,
            total,
            message,
        } => ToolProgress::ToolReport {
            call_id: call_id.clone(),
            name: tool.clone(),
            progress: *progress,
            total: *total,
            message: message.clone(),
        },
        EventPayload::Usage { call, total } => ToolProgress::Usage {
            call: *call,
            total: *total,
        },
        _ => return None,
    };
    let mut out = update(event.task_id.clone(), event.context_id.clone(), &progress);
    out.timestamp = event.timestamp;
    Some(out)
}

/// The first progress update of a turn: its trace id (`generated`: made up
/// here because no OpenTelemetry trace is recorded).
pub(crate) fn turn_start(
    task_id: Arc<str>,
    context_id: Arc<str>,
    trace_id: &str,
    generated: bool,
) -> AgentEvent {
    update(
        task_id,
        context_id,
        &ToolProgress::TurnStart {
            trace_id: trace_id.to_owned(),
            trace_id_generated: generated,
        },
    )
}

/// A `working` status update carrying `progress` as its message's only
/// part, marked by the extension's URI in its metadata.
fn update(task_id: Arc<str>, context_id: Arc<str>, progress: &ToolProgress) -> AgentEvent {
    let data = serde_json::to_value(progress).unwrap_or(Value::Null);
    let mut marker = Map::new();
    marker.insert("event".into(), Value::from(progress.name()));
    let mut metadata = Map::new();
    metadata.insert(TOOL_PROGRESS_EXTENSION.into(), Value::Object(marker));
    let message = Message::with_parts(Role::Assistant, vec![Part::Data { data }]);
    AgentEvent::new(
        task_id,
        context_id,
        EventPayload::StatusUpdate {
            status: TaskStatus::new(TaskState::Working).with_message(message),
            is_final: false,
            metadata: StatusMetadata::entries(metadata),
        },
    )
}

/// The text of a tool result: its text parts, data as JSON, files by name.
fn result_text(result: &ToolResult) -> String {
    let mut out = String::new();
    for part in &result.content {
        match part {
            Part::Text { text } => out.push_str(text),
            Part::Data { data } => out.push_str(&data.to_string()),
            Part::File { file } => {
                out.push_str(&format!("[file {}]", file.name.as_deref().unwrap_or("")));
            }
            // A part kind newer than this code: not shown.
            _ => {}
        }
    }
    out
}

/// At most [`MAX_TEXT`] characters of `text`, and whether it was cut.
fn clip(text: &str) -> (String, bool) {
    match text.char_indices().nth(MAX_TEXT) {
        Some((end, _)) => (format!("{}…", &text[..end]), true),
        None => (text.to_owned(), false),
    }
}

/// The arguments, or when their JSON is too long a clipped text of it.
fn clip_value(value: &Value) -> Value {
    let text = value.to_string();
    match clip(&text) {
        (_, false) => value.clone(),
        (clipped, true) => json!({ "_truncated": clipped }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use axum::http::HeaderValue;
    use looopy_core::ToolCall;

    use super::*;

    #[test]
    fn activation_reads_both_headers_and_lists() {
        let mut h = HeaderMap::new();
        assert!(!requested(&h));
        h.insert(
            EXTENSIONS_HEADER,
            HeaderValue::from_static(
                "https://x.example/ext/v1, https://looopy.dev/extensions/tool-progress/v1",
            ),
        );
        assert!(requested(&h));
        let mut legacy = HeaderMap::new();
        legacy.insert(
            LEGACY_EXTENSIONS_HEADER,
            HeaderValue::from_static(TOOL_PROGRESS_EXTENSION),
        );
        assert!(requested(&legacy) && uses_legacy_header(&legacy));
        // Another version of the extension is not this one (spec §4.6.3).
        let mut v2 = HeaderMap::new();
        v2.insert(
            EXTENSIONS_HEADER,
            HeaderValue::from_static("https://looopy.dev/extensions/tool-progress/v2"),
        );
        assert!(!requested(&v2));
    }

    #[test]
    fn tool_events_become_marked_working_updates() {
        let call = ToolCall::new("c1", "sleep", r#"{"ms":5}"#);
        let start = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::ToolStart {
                arguments: call.parsed_arguments(),
                call,
            },
        );
        let p = from_internal(&start).unwrap();
        assert!(is_progress(&p));
        assert_eq!(p.state(), Some(TaskState::Working));
        let EventPayload::StatusUpdate { status, .. } = &*p.payload else {
            panic!()
        };
        let Part::Data { data } = &status.message.as_ref().unwrap().parts[0] else {
            panic!()
        };
        assert_eq!(data["event"], "tool-start");
        assert_eq!(data["callId"], "c1");
        assert_eq!(data["arguments"]["ms"], 5);

        let long = "x".repeat(MAX_TEXT + 10);
        let done = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::ToolComplete {
                name: "sleep".into(),
                result: ToolResult::error("c1", long),
                outcome: ToolOutcome::Error,
                duration_ms: 7,
            },
        );
        let p = from_internal(&done).unwrap();
        let EventPayload::StatusUpdate { status, .. } = &*p.payload else {
            panic!()
        };
        let Part::Data { data } = &status.message.as_ref().unwrap().parts[0] else {
            panic!()
        };
        assert_eq!(data["isError"], true);
        assert_eq!(data["failure"], "failed");
        assert_eq!(data["truncated"], true);
        assert_eq!(data["durationMs"], 7);
        assert_eq!(
            data["result"].as_str().unwrap().chars().count(),
            MAX_TEXT + 1
        );

        let delta = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::ToolCallArgumentsDelta {
                iteration: 1,
                index: 0,
                call_id: "c1".into(),
                name: "sleep".into(),
                delta: "{\"ms\":".into(),
            },
        );
        let p = from_internal(&delta).unwrap();
        assert!(is_progress(&p));
        let EventPayload::StatusUpdate { status, .. } = &*p.payload else {
            panic!()
        };
        let Part::Data { data } = &status.message.as_ref().unwrap().parts[0] else {
            panic!()
        };
        assert_eq!(data["event"], "tool-call-delta");
        assert_eq!(data["callId"], "c1");
        assert_eq!(data["name"], "sleep");
        assert_eq!(data["delta"], "{\"ms\":");

        let remote = AgentEvent::new(
            "r1".into(),
            "rc".into(),
            EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::Completed),
                is_final: true,
                metadata: looopy_core::StatusMetadata::default(),
            },
        );
        let sub = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::SubAgent {
                path: "t/r1".into(),
                tool: "helper".into(),
                call_id: "c9".into(),
                event: Box::new(remote),
            },
        );
        let p = from_internal(&sub).unwrap();
        let EventPayload::StatusUpdate { status, .. } = &*p.payload else {
            panic!()
        };
        let Part::Data { data } = &status.message.as_ref().unwrap().parts[0] else {
            panic!()
        };
        assert_eq!(data["event"], "sub-agent");
        assert_eq!(data["path"], "t/r1");
        assert_eq!(data["update"]["kind"], "status-update");
        assert_eq!(data["update"]["taskId"], "r1");

        let other = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::Reasoning { text: "x".into() },
        );
        assert!(from_internal(&other).is_none());
    }
}
