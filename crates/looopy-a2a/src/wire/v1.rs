//! A2A 1.0 wire forms, through the official types of the `a2a-lf` crate
//! (ProtoJSON: camelCase fields, `TASK_STATE_*` / `ROLE_*` enums, parts
//! distinguished by which of `text` / `raw` / `url` / `data` is present,
//! stream items wrapped as `{"task": ...}`, `{"statusUpdate": ...}`...).

use std::collections::HashMap;
use std::sync::Arc;

use a2a::{PartContent, StreamResponse};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::SubsecRound;
use looopy_core::{
    AgentEvent, Artifact, EventPayload, FileContent, Message, Part, Role, StatusMetadata,
    TaskState, TaskStatus,
};
use serde_json::{Map, Value};

use crate::RpcError;
use crate::model::{
    ListQuery, SendParams, SendRequest, SendResponse, StreamEvent, TaskQuery, TaskSnapshot,
    WireMessage, history_length,
};

// ----------------------------------------------------------------- core -> wire

fn meta(map: &Map<String, Value>) -> Option<HashMap<String, Value>> {
    (!map.is_empty()).then(|| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn unmeta(map: Option<HashMap<String, Value>>) -> Map<String, Value> {
    map.map(|m| m.into_iter().collect()).unwrap_or_default()
}

/// A status update's metadata, as the wire's one object.
#[cfg(test)]
fn status_meta(metadata: &StatusMetadata) -> Option<HashMap<String, Value>> {
    (!metadata.is_empty()).then(|| metadata.to_map().into_iter().collect())
}

pub(super) fn state(s: TaskState) -> a2a::TaskState {
    match s {
        TaskState::Submitted => a2a::TaskState::Submitted,
        TaskState::Working => a2a::TaskState::Working,
        TaskState::InputRequired => a2a::TaskState::InputRequired,
        TaskState::Completed => a2a::TaskState::Completed,
        TaskState::Canceled => a2a::TaskState::Canceled,
        TaskState::Failed => a2a::TaskState::Failed,
        TaskState::Rejected => a2a::TaskState::Rejected,
        TaskState::AuthRequired => a2a::TaskState::AuthRequired,
        // Unknown, and any state newer than this code.
        _ => a2a::TaskState::Unspecified,
    }
}

pub(super) fn part(p: &Part) -> a2a::Part {
    match p {
        Part::Text { text } => a2a::Part::text(text.clone()),
        Part::Data { data } => a2a::Part::data(data.clone()),
        Part::File { file } => {
            let mut out = match (&file.uri, &file.bytes) {
                (Some(uri), _) => a2a::Part::url(uri.clone()),
                (None, Some(b64)) => match BASE64.decode(b64) {
                    Ok(bytes) => a2a::Part::raw(bytes),
                    Err(_) => a2a::Part::text(format!(
                        "[file {}: its bytes are not valid base64]",
                        file.name.as_deref().unwrap_or("")
                    )),
                },
                (None, None) => a2a::Part::raw(Vec::new()),
            };
            out.filename = file.name.clone();
            out.media_type = file.mime_type.clone();
            out
        }
        // A part kind newer than this code: an empty text part.
        _ => a2a::Part::text(String::new()),
    }
}

fn message(m: &Message, task_id: Option<&str>, context_id: Option<&str>) -> a2a::Message {
    a2a::Message {
        message_id: m.message_id.clone(),
        context_id: context_id.map(Into::into),
        task_id: task_id.map(Into::into),
        role: match m.role {
            Role::User => a2a::Role::User,
            _ => a2a::Role::Agent,
        },
        parts: m.parts.iter().map(part).collect(),
        metadata: meta(&m.metadata),
        extensions: None,
        reference_task_ids: None,
    }
}

fn wire_message(m: &WireMessage) -> a2a::Message {
    let mut out = message(&m.message, m.task_id.as_deref(), m.context_id.as_deref());
    if !m.reference_task_ids.is_empty() {
        out.reference_task_ids = Some(m.reference_task_ids.clone());
    }
    out
}

fn status(s: &TaskStatus, task_id: &str, context_id: &str) -> a2a::TaskStatus {
    a2a::TaskStatus {
        state: state(s.state),
        message: s
            .message
            .as_ref()
            .map(|m| message(m, Some(task_id), Some(context_id))),
        // Millisecond precision (spec §5.6.1).
        timestamp: Some(s.timestamp.trunc_subsecs(3)),
    }
}

fn artifact(a: &Artifact) -> a2a::Artifact {
    a2a::Artifact {
        artifact_id: a.artifact_id.clone(),
        name: a.name.clone(),
        description: a.description.clone(),
        parts: a.parts.iter().map(part).collect(),
        metadata: meta(&a.metadata),
        extensions: None,
    }
}

fn task(t: &TaskSnapshot) -> a2a::Task {
    a2a::Task {
        id: t.id.clone(),
        context_id: t.context_id.clone(),
        status: status(&t.status, &t.id, &t.context_id),
        artifacts: (!t.artifacts.is_empty()).then(|| t.artifacts.iter().map(artifact).collect()),
        history: (!t.history.is_empty()).then(|| {
            t.history
                .iter()
                .map(|m| message(m, Some(&t.id), Some(&t.context_id)))
                .collect()
        }),
        metadata: meta(&t.metadata),
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A bare `Task` (the result of `GetTask`, `CancelTask`).
pub(super) fn encode_task(t: &TaskSnapshot) -> Value {
    to_value(&task(t))
}

/// A `SendMessageResponse`: `{"task": ...}` or `{"message": ...}`.
pub(super) fn encode_send_response(r: &SendResponse) -> Value {
    to_value(&match r {
        SendResponse::Task(t) => a2a::SendMessageResponse::Task(task(t)),
        SendResponse::Message(m) => a2a::SendMessageResponse::Message(wire_message(m)),
    })
}

/// A `StreamResponse` holding a task (the first item of a task stream).
pub(super) fn stream_task(t: &TaskSnapshot) -> StreamResponse {
    StreamResponse::Task(task(t))
}

/// A `StreamResponse` holding a direct message (the only item of a
/// message stream).
pub(super) fn stream_message(m: &WireMessage) -> StreamResponse {
    StreamResponse::Message(wire_message(m))
}

/// A logged event in the official types: what the stream writer
/// (`v1_stream`, the one encoder of a logged event) is tested against.
#[cfg(test)]
pub(super) fn stream_response(e: &AgentEvent) -> Option<StreamResponse> {
    let (task_id, context_id) = (&*e.task_id, &*e.context_id);
    Some(match &*e.payload {
        EventPayload::Task {
            status: s,
            metadata,
        } => StreamResponse::Task(a2a::Task {
            id: task_id.into(),
            context_id: context_id.into(),
            status: status(s, task_id, context_id),
            artifacts: None,
            history: None,
            metadata: meta(metadata),
        }),
        EventPayload::StatusUpdate {
            status: s,
            metadata,
            ..
        } => StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
            task_id: task_id.into(),
            context_id: context_id.into(),
            status: status(s, task_id, context_id),
            metadata: status_meta(metadata),
        }),
        EventPayload::ArtifactUpdate {
            artifact: a,
            append,
            last_chunk,
        } => StreamResponse::ArtifactUpdate(a2a::TaskArtifactUpdateEvent {
            task_id: task_id.into(),
            context_id: context_id.into(),
            artifact: artifact(a),
            append: Some(*append),
            last_chunk: Some(*last_chunk),
            metadata: None,
        }),
        _ => return None,
    })
}

/// `SendMessageRequest`, as the client sends it.
pub(super) fn encode_send_params(r: &SendRequest) -> Value {
    let mut m = message(&r.message, r.task_id.as_deref(), r.context_id.as_deref());
    m.role = a2a::Role::User;
    to_value(&a2a::SendMessageRequest {
        message: m,
        configuration: Some(a2a::SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: None,
            history_length: r
                .history_length
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
            return_immediately: Some(!r.blocking),
        }),
        metadata: meta(&r.metadata),
        tenant: None,
    })
}

// ----------------------------------------------------------------- wire -> core

fn core_state(s: &a2a::TaskState) -> TaskState {
    match s {
        a2a::TaskState::Submitted => TaskState::Submitted,
        a2a::TaskState::Working => TaskState::Working,
        a2a::TaskState::InputRequired => TaskState::InputRequired,
        a2a::TaskState::Completed => TaskState::Completed,
        a2a::TaskState::Canceled => TaskState::Canceled,
        a2a::TaskState::Failed => TaskState::Failed,
        a2a::TaskState::Rejected => TaskState::Rejected,
        a2a::TaskState::AuthRequired => TaskState::AuthRequired,
        a2a::TaskState::Unspecified => TaskState::Unknown,
    }
}

fn core_part(p: a2a::Part) -> Part {
    match p.content {
        PartContent::Text(text) => Part::Text { text },
        PartContent::Data(data) => Part::Data { data },
        PartContent::Url(uri) => Part::file(FileContent {
            blob: None,
            name: p.filename,
            mime_type: p.media_type,
            uri: Some(uri),
            bytes: None,
        }),
        PartContent::Raw(bytes) => Part::file(FileContent {
            blob: None,
            name: p.filename,
            mime_type: p.media_type,
            uri: None,
            bytes: Some(BASE64.encode(bytes)),
        }),
    }
}

fn core_message(m: a2a::Message) -> WireMessage {
    let role = match m.role {
        a2a::Role::User => Role::User,
        _ => Role::Assistant,
    };
    let mut message = Message::with_parts(role, m.parts.into_iter().map(core_part).collect());
    message.message_id = m.message_id;
    message.metadata = unmeta(m.metadata);
    WireMessage {
        message,
        task_id: m.task_id.filter(|s| !s.is_empty()),
        context_id: m.context_id.filter(|s| !s.is_empty()),
        reference_task_ids: m.reference_task_ids.unwrap_or_default(),
    }
}

fn core_status(s: a2a::TaskStatus) -> TaskStatus {
    TaskStatus {
        state: core_state(&s.state),
        message: s.message.map(|m| Arc::new(core_message(m).message)),
        timestamp: s.timestamp.unwrap_or_else(chrono::Utc::now),
    }
}

fn core_artifact(a: a2a::Artifact) -> Artifact {
    Artifact {
        artifact_id: a.artifact_id,
        name: a.name,
        description: a.description,
        parts: a.parts.into_iter().map(core_part).collect(),
        metadata: unmeta(a.metadata),
    }
}

fn core_task(t: a2a::Task) -> TaskSnapshot {
    TaskSnapshot {
        status: core_status(t.status),
        artifacts: t
            .artifacts
            .unwrap_or_default()
            .into_iter()
            .map(core_artifact)
            .collect(),
        history: t
            .history
            .unwrap_or_default()
            .into_iter()
            .map(|m| core_message(m).message)
            .collect(),
        metadata: unmeta(t.metadata),
        id: t.id,
        context_id: t.context_id,
    }
}

/// `SendMessageRequest`, as the server receives it.
pub(super) fn decode_send_params(params: Value) -> Result<SendParams, RpcError> {
    let p: a2a::SendMessageRequest = crate::jsonrpc::params(params)?;
    if p.message.role != a2a::Role::User {
        return Err(RpcError::invalid_params(
            "message.role: must be \"ROLE_USER\"",
        ));
    }
    let (return_immediately, history) = match &p.configuration {
        Some(c) => (c.return_immediately.unwrap_or(false), c.history_length),
        None => (false, None),
    };
    let push = p
        .configuration
        .and_then(|c| c.task_push_notification_config)
        .and_then(|c| serde_json::to_value(c).ok());
    Ok(SendParams {
        message: core_message(p.message),
        // 1.0 sends block unless `returnImmediately` (spec §3.2.2).
        blocking: !return_immediately,
        history_length: history_length(history.map(i64::from))?,
        metadata: unmeta(p.metadata),
        push,
    })
}

/// `GetTaskRequest`; `CancelTaskRequest` and `SubscribeToTaskRequest` share its `id`.
pub(super) fn decode_task_query(params: Value) -> Result<TaskQuery, RpcError> {
    let q: a2a::GetTaskRequest = crate::jsonrpc::params(params)?;
    Ok(TaskQuery {
        id: q.id,
        history_length: history_length(q.history_length.map(i64::from))?,
    })
}

/// `ListTasksRequest`.
pub(super) fn decode_list_query(params: Value) -> Result<ListQuery, RpcError> {
    let q: a2a::ListTasksRequest = crate::jsonrpc::params(params)?;
    let page_size = match q.page_size {
        None => 50,
        Some(n) if (1..=100).contains(&n) => n as usize,
        Some(n) => {
            return Err(RpcError::invalid_params(format!(
                "pageSize: must be between 1 and 100, got {n}"
            ))
            .with_meta("field", "pageSize"));
        }
    };
    let offset = match q.page_token.as_deref() {
        None | Some("") => 0,
        Some(t) => t.parse::<usize>().map_err(|_| {
            RpcError::invalid_params("pageToken: not a token this server issued")
                .with_meta("field", "pageToken")
        })?,
    };
    Ok(ListQuery {
        context_id: q.context_id.filter(|s| !s.is_empty()),
        state: q
            .status
            .filter(|s| *s != a2a::TaskState::Unspecified)
            .map(|s| core_state(&s)),
        page_size,
        offset,
        history_length: history_length(q.history_length.map(i64::from))?,
        include_artifacts: q.include_artifacts.unwrap_or(false),
        updated_after: q.status_timestamp_after,
    })
}

/// A `ListTasksResponse`.
pub(super) fn encode_list(
    tasks: &[TaskSnapshot],
    next: Option<usize>,
    page_size: usize,
    total: usize,
) -> Value {
    to_value(&a2a::ListTasksResponse {
        tasks: tasks.iter().map(task).collect(),
        next_page_token: next.map(|n| n.to_string()).unwrap_or_default(),
        page_size: i32::try_from(page_size).unwrap_or(i32::MAX),
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}

/// A `SendMessageResponse`.
pub(super) fn decode_send_response(v: Value) -> Result<SendResponse, String> {
    let r: a2a::SendMessageResponse = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok(match r {
        a2a::SendMessageResponse::Task(t) => SendResponse::Task(core_task(t)),
        a2a::SendMessageResponse::Message(m) => SendResponse::Message(core_message(m)),
    })
}

/// A bare `Task`.
pub(super) fn decode_task(v: Value) -> Result<TaskSnapshot, String> {
    let t: a2a::Task = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok(core_task(t))
}

/// A `ListTasksResponse`: the tasks and the next page token ("" on the last page).
pub(super) fn decode_list(v: Value) -> Result<(Vec<TaskSnapshot>, String), String> {
    let r: a2a::ListTasksResponse = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok((
        r.tasks.into_iter().map(core_task).collect(),
        r.next_page_token,
    ))
}

/// A `StreamResponse`. Status updates get `final` from their state (1.0 has
/// no such flag: the stream ends with a terminal or interrupted state).
pub(super) fn decode_stream_event(v: Value) -> Result<StreamEvent, String> {
    let r: StreamResponse = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok(match r {
        StreamResponse::Task(t) => StreamEvent::Task(core_task(t)),
        StreamResponse::Message(m) => StreamEvent::Message(core_message(m)),
        StreamResponse::StatusUpdate(u) => {
            let status = core_status(u.status);
            let mut event = AgentEvent::new(
                u.task_id.into(),
                u.context_id.into(),
                EventPayload::StatusUpdate {
                    is_final: status.state.ends_turn(),
                    status: status.clone(),
                    metadata: StatusMetadata::from_map(unmeta(u.metadata)),
                },
            );
            event.timestamp = status.timestamp;
            StreamEvent::Update(event)
        }
        StreamResponse::ArtifactUpdate(u) => StreamEvent::Update(AgentEvent::new(
            u.task_id.into(),
            u.context_id.into(),
            EventPayload::ArtifactUpdate {
                artifact: core_artifact(u.artifact),
                append: u.append.unwrap_or(false),
                last_chunk: u.last_chunk.unwrap_or(false),
            },
        )),
    })
}

/// Rewrites the field names of 1.0 params from the proto's `snake_case` to
/// ProtoJSON's `lowerCamelCase` (ProtoJSON readers accept both, spec
/// §5.5; the official types read only the latter). Values of `metadata`
/// and `data` are free-form `Struct`s and keep their keys.
pub(super) fn camel_case_names(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let renamed: Map<String, Value> = std::mem::take(map)
                .into_iter()
                .map(|(key, mut v)| {
                    if key != "metadata" && key != "data" {
                        camel_case_names(&mut v);
                    }
                    (lower_camel(&key), v)
                })
                .collect();
            *map = renamed;
        }
        Value::Array(items) => items.iter_mut().for_each(camel_case_names),
        _ => {}
    }
}

fn lower_camel(key: &str) -> String {
    if !key.contains('_') {
        return key.to_owned();
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn events_are_wrapped_with_screaming_states() {
        let e = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::InputRequired)
                    .with_message(Message::assistant("which city?")),
                is_final: true,
                metadata: looopy_core::StatusMetadata::default(),
            },
        );
        let v = super::super::update_result(crate::ProtocolVersion::V1_0, &Arc::new(e))
            .unwrap()
            .to_value();
        let u = &v["statusUpdate"];
        assert_eq!(u["taskId"], "t");
        assert_eq!(u["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(u["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(u["status"]["message"]["parts"][0]["text"], "which city?");
        assert!(u.get("final").is_none());
        match decode_stream_event(v).unwrap() {
            StreamEvent::Update(back) => assert!(back.is_final()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn files_become_raw_or_url_parts() {
        let f = Part::file(FileContent {
            blob: None,
            name: Some("a.png".into()),
            mime_type: Some("image/png".into()),
            uri: None,
            bytes: Some(BASE64.encode(b"png")),
        });
        let v = to_value(&part(&f));
        assert_eq!(
            v,
            json!({"raw": BASE64.encode(b"png"), "filename": "a.png", "mediaType": "image/png"})
        );
        let back: a2a::Part = serde_json::from_value(v).unwrap();
        assert_eq!(core_part(back), f);
    }

    #[test]
    fn proto_field_names_are_read_too() {
        let mut v = json!({"history_length": 2, "id": "t", "metadata": {"a_b": 1},
            "message": {"message_id": "m", "parts": [{"data": {"x_y": 1}, "media_type": "a/b"}]}});
        camel_case_names(&mut v);
        assert_eq!(
            v,
            json!({"historyLength": 2, "id": "t", "metadata": {"a_b": 1},
                "message": {"messageId": "m", "parts": [{"data": {"x_y": 1}, "mediaType": "a/b"}]}})
        );
    }

    #[test]
    fn send_params_are_validated() {
        let ok = json!({"message": {"role": "ROLE_USER", "messageId": "m",
            "parts": [{"text": "hi"}]}, "configuration": {"returnImmediately": true}});
        let p = decode_send_params(ok).unwrap();
        assert!(!p.blocking);
        for bad in [
            json!({}),
            json!({"message": {"role": "ROLE_AGENT", "messageId": "m", "parts": [{"text": "x"}]}}),
            json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"nope": 1}]}}),
            json!({"message": {"role": "user", "messageId": "m", "parts": []}}),
        ] {
            assert_eq!(decode_send_params(bad).unwrap_err().code, -32602);
        }
    }
}
