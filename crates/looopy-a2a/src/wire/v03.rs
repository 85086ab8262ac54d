//! A2A 0.3 wire forms, written by hand (no official Rust types exist): every
//! object is tagged by `kind` (`task`, `message`, `status-update`,
//! `artifact-update`; parts `text`, `file`, `data`), states are kebab-case
//! (`input-required`), roles are `user` / `agent`.
//!
//! Shapes follow `types/src/types.ts` of a2aproject/A2A at tag v0.3.0.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use looopy_core::{
    AgentEvent, Artifact, EventPayload, FileContent, Message, Part, Role, StatusMetadata,
    TaskState, TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::model::{
    SendParams, SendRequest, SendResponse, StreamEvent, TaskQuery, TaskSnapshot, WireMessage,
    history_length,
};

/// A part (`TextPart` | `FilePart` | `DataPart`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Part03 {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
    File {
        file: File03,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
    Data {
        data: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
}

/// `FileWithBytes` | `FileWithUri`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct File03 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bytes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Role03 {
    User,
    Agent,
}

fn message_kind() -> String {
    "message".into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message03 {
    role: Role03,
    parts: Vec<Part03>,
    message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reference_task_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extensions: Option<Vec<String>>,
    #[serde(default = "message_kind")]
    kind: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status03 {
    state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<Message03>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Artifact03 {
    artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    parts: Vec<Part03>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Task03 {
    id: String,
    context_id: String,
    status: Status03,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history: Option<Vec<Message03>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    artifacts: Option<Vec<Artifact03>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusUpdate03 {
    task_id: String,
    context_id: String,
    status: Status03,
    #[serde(rename = "final", default)]
    is_final: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactUpdate03 {
    task_id: String,
    context_id: String,
    artifact: Artifact03,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    append: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_chunk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Map<String, Value>>,
}

/// A result object, tagged by `kind` (the task gets `"kind":"task"`...).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind")]
enum Kinded03 {
    #[serde(rename = "task")]
    Task(Task03),
    #[serde(rename = "message")]
    Message(Message03),
    #[serde(rename = "status-update")]
    StatusUpdate(StatusUpdate03),
    #[serde(rename = "artifact-update")]
    ArtifactUpdate(ArtifactUpdate03),
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Config03 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accepted_output_modes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    push_notification_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blocking: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct SendParams03 {
    message: Message03,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    configuration: Option<Config03>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskQuery03 {
    id: String,
    #[serde(default)]
    history_length: Option<i64>,
}

// ----------------------------------------------------------------- core -> wire

fn timestamp(t: &DateTime<Utc>) -> String {
    super::timestamp::to_string(t, super::timestamp::Millis::Always)
}

fn part(p: &Part) -> Part03 {
    match p {
        Part::Text { text } => Part03::Text {
            text: text.clone(),
            metadata: None,
        },
        // 0.3 data parts hold objects: anything else is wrapped.
        Part::Data { data } => Part03::Data {
            data: if data.is_object() {
                data.clone()
            } else {
                json!({ "value": data })
            },
            metadata: None,
        },
        Part::File { file } => Part03::File {
            file: File03 {
                name: file.name.clone(),
                mime_type: file.mime_type.clone(),
                bytes: file.bytes.clone(),
                uri: file.uri.clone(),
            },
            metadata: None,
        },
        // A part kind newer than this code: an empty text part.
        _ => Part03::Text {
            text: String::new(),
            metadata: None,
        },
    }
}

fn non_empty(map: &Map<String, Value>) -> Option<Map<String, Value>> {
    (!map.is_empty()).then(|| map.clone())
}

fn message(m: &Message, task_id: Option<&str>, context_id: Option<&str>) -> Message03 {
    Message03 {
        role: match m.role {
            Role::User => Role03::User,
            _ => Role03::Agent,
        },
        parts: m.parts.iter().map(part).collect(),
        message_id: m.message_id.clone(),
        task_id: task_id.map(Into::into),
        context_id: context_id.map(Into::into),
        reference_task_ids: None,
        metadata: non_empty(&m.metadata),
        extensions: None,
        kind: message_kind(),
    }
}

fn status(s: &TaskStatus, task_id: &str, context_id: &str) -> Status03 {
    Status03 {
        state: s.state,
        message: s
            .message
            .as_ref()
            .map(|m| message(m, Some(task_id), Some(context_id))),
        timestamp: Some(timestamp(&s.timestamp)),
    }
}

fn artifact(a: &Artifact) -> Artifact03 {
    Artifact03 {
        artifact_id: a.artifact_id.clone(),
        name: a.name.clone(),
        description: a.description.clone(),
        parts: a.parts.iter().map(part).collect(),
        metadata: non_empty(&a.metadata),
    }
}

fn task(t: &TaskSnapshot) -> Task03 {
    Task03 {
        id: t.id.clone(),
        context_id: t.context_id.clone(),
        status: status(&t.status, &t.id, &t.context_id),
        history: (!t.history.is_empty()).then(|| {
            t.history
                .iter()
                .map(|m| message(m, Some(&t.id), Some(&t.context_id)))
                .collect()
        }),
        artifacts: (!t.artifacts.is_empty()).then(|| t.artifacts.iter().map(artifact).collect()),
        metadata: non_empty(&t.metadata),
    }
}

fn to_value(k: Kinded03) -> Value {
    serde_json::to_value(k).unwrap_or(Value::Null)
}

/// A `Task` object (with `"kind":"task"`).
pub(super) fn encode_task(t: &TaskSnapshot) -> Value {
    to_value(Kinded03::Task(task(t)))
}

/// The result of `message/send`: the task or message itself.
pub(super) fn encode_send_response(r: &SendResponse) -> Value {
    match r {
        SendResponse::Task(t) => encode_task(t),
        SendResponse::Message(m) => to_value(Kinded03::Message(wire_message(m))),
    }
}

fn wire_message(m: &WireMessage) -> Message03 {
    let mut out = message(&m.message, m.task_id.as_deref(), m.context_id.as_deref());
    if !m.reference_task_ids.is_empty() {
        out.reference_task_ids = Some(m.reference_task_ids.clone());
    }
    out
}

/// A 0.3 stream result in its typed form, serialised as the object itself
/// tagged by `kind` (the field is private: only this module builds one).
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub(crate) struct StreamResult03(Kinded03);

/// A stream result: the object itself, tagged by `kind`.
pub(super) fn stream_result(e: &StreamEvent) -> Option<StreamResult03> {
    Some(StreamResult03(match e {
        StreamEvent::Task(t) => Kinded03::Task(task(t)),
        StreamEvent::Message(m) => Kinded03::Message(wire_message(m)),
        StreamEvent::Update(event) => return update_result(event),
    }))
}

/// The stream result of a logged event; `None` for events that never leave.
pub(super) fn update_result(e: &AgentEvent) -> Option<StreamResult03> {
    let (task_id, context_id) = (&*e.task_id, &*e.context_id);
    Some(StreamResult03(match &*e.payload {
        EventPayload::Task {
            status: s,
            metadata,
        } => Kinded03::Task(Task03 {
            id: task_id.into(),
            context_id: context_id.into(),
            status: status(s, task_id, context_id),
            history: None,
            artifacts: None,
            metadata: non_empty(metadata),
        }),
        EventPayload::StatusUpdate {
            status: s,
            is_final,
            metadata,
        } => Kinded03::StatusUpdate(StatusUpdate03 {
            task_id: task_id.into(),
            context_id: context_id.into(),
            status: status(s, task_id, context_id),
            is_final: *is_final,
            metadata: (!metadata.is_empty()).then(|| metadata.to_map()),
        }),
        EventPayload::ArtifactUpdate {
            artifact: a,
            append,
            last_chunk,
        } => Kinded03::ArtifactUpdate(ArtifactUpdate03 {
            task_id: task_id.into(),
            context_id: context_id.into(),
            artifact: artifact(a),
            append: Some(*append),
            last_chunk: Some(*last_chunk),
            metadata: None,
        }),
        _ => return None,
    }))
}

/// `message/send` params, as the client sends them.
pub(super) fn encode_send_params(r: &SendRequest) -> Value {
    let mut m = message(&r.message, r.task_id.as_deref(), r.context_id.as_deref());
    m.role = Role03::User;
    let params = SendParams03 {
        message: m,
        configuration: Some(Config03 {
            accepted_output_modes: None,
            history_length: r.history_length.map(|n| n as i64),
            push_notification_config: None,
            blocking: Some(r.blocking),
        }),
        metadata: non_empty(&r.metadata),
    };
    serde_json::to_value(params).unwrap_or(Value::Null)
}

// ----------------------------------------------------------------- wire -> core

fn core_part(p: Part03) -> Result<Part, String> {
    Ok(match p {
        Part03::Text { text, .. } => Part::Text { text },
        Part03::Data { data, .. } => Part::Data { data },
        Part03::File { file, .. } => {
            if file.bytes.is_none() && file.uri.is_none() {
                return Err("a file part needs `file.bytes` or `file.uri`".into());
            }
            Part::file(FileContent {
                blob: None,
                name: file.name,
                mime_type: file.mime_type,
                uri: file.uri,
                bytes: file.bytes,
            })
        }
    })
}

fn core_parts(parts: Vec<Part03>) -> Result<Vec<Part>, String> {
    parts.into_iter().map(core_part).collect()
}

fn core_message(m: Message03) -> Result<WireMessage, String> {
    let role = match m.role {
        Role03::User => Role::User,
        Role03::Agent => Role::Assistant,
    };
    let mut message = Message::with_parts(role, core_parts(m.parts)?);
    message.message_id = m.message_id;
    message.metadata = m.metadata.unwrap_or_default();
    Ok(WireMessage {
        message,
        task_id: m.task_id.filter(|s| !s.is_empty()),
        context_id: m.context_id.filter(|s| !s.is_empty()),
        reference_task_ids: m.reference_task_ids.unwrap_or_default(),
    })
}

fn core_timestamp(t: Option<&str>) -> DateTime<Utc> {
    t.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(Utc::now, |t| t.with_timezone(&Utc))
}

fn core_status(s: Status03) -> Result<TaskStatus, String> {
    Ok(TaskStatus {
        state: s.state,
        message: s
            .message
            .map(core_message)
            .transpose()?
            .map(|m| Arc::new(m.message)),
        timestamp: core_timestamp(s.timestamp.as_deref()),
    })
}

fn core_artifact(a: Artifact03) -> Result<Artifact, String> {
    Ok(Artifact {
        artifact_id: a.artifact_id,
        name: a.name,
        description: a.description,
        parts: core_parts(a.parts)?,
        metadata: a.metadata.unwrap_or_default(),
    })
}

fn core_task(t: Task03) -> Result<TaskSnapshot, String> {
    Ok(TaskSnapshot {
        status: core_status(t.status)?,
        artifacts: t
            .artifacts
            .unwrap_or_default()
            .into_iter()
            .map(core_artifact)
            .collect::<Result<_, _>>()?,
        history: t
            .history
            .unwrap_or_default()
            .into_iter()
            .map(|m| core_message(m).map(|m| m.message))
            .collect::<Result<_, _>>()?,
        metadata: t.metadata.unwrap_or_default(),
        id: t.id,
        context_id: t.context_id,
    })
}

/// `message/send` / `message/stream` params, as the server receives them.
pub(super) fn decode_send_params(params: Value) -> Result<SendParams, crate::RpcError> {
    let p: SendParams03 = crate::jsonrpc::params(params)?;
    if p.message.role != Role03::User {
        return Err(crate::RpcError::invalid_params(
            "message.role: must be \"user\"",
        ));
    }
    let config = p.configuration.unwrap_or_default();
    let message = core_message(p.message).map_err(crate::RpcError::invalid_params)?;
    Ok(SendParams {
        message,
        // 0.3 sends block unless `blocking` is false (as the Python SDK does).
        blocking: config.blocking.unwrap_or(true),
        history_length: history_length(config.history_length)?,
        metadata: p.metadata.unwrap_or_default(),
        push: config.push_notification_config,
    })
}

/// `tasks/get` params (`id`, `historyLength`); `tasks/cancel` and
/// `tasks/resubscribe` use the same `id`.
pub(super) fn decode_task_query(params: Value) -> Result<TaskQuery, crate::RpcError> {
    let q: TaskQuery03 = crate::jsonrpc::params(params)?;
    Ok(TaskQuery {
        id: q.id,
        history_length: history_length(q.history_length)?,
    })
}

/// A `Task` or `Message` result.
pub(super) fn decode_send_response(v: Value) -> Result<SendResponse, String> {
    match decode_stream_event(v)? {
        StreamEvent::Task(t) => Ok(SendResponse::Task(t)),
        StreamEvent::Message(m) => Ok(SendResponse::Message(m)),
        StreamEvent::Update(_) => Err("expected a task or a message".into()),
    }
}

/// A task result.
pub(super) fn decode_task(v: Value) -> Result<TaskSnapshot, String> {
    match decode_stream_event(v)? {
        StreamEvent::Task(t) => Ok(t),
        _ => Err("expected a task".into()),
    }
}

/// A stream result, by its `kind`.
pub(super) fn decode_stream_event(v: Value) -> Result<StreamEvent, String> {
    let k: Kinded03 = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok(match k {
        Kinded03::Task(t) => StreamEvent::Task(core_task(t)?),
        Kinded03::Message(m) => StreamEvent::Message(core_message(m)?),
        Kinded03::StatusUpdate(u) => {
            let status = core_status(u.status)?;
            let mut event = AgentEvent::new(
                u.task_id.into(),
                u.context_id.into(),
                EventPayload::StatusUpdate {
                    status: status.clone(),
                    is_final: u.is_final,
                    metadata: StatusMetadata::from_map(u.metadata.unwrap_or_default()),
                },
            );
            event.timestamp = status.timestamp;
            StreamEvent::Update(event)
        }
        Kinded03::ArtifactUpdate(u) => StreamEvent::Update(AgentEvent::new(
            u.task_id.into(),
            u.context_id.into(),
            EventPayload::ArtifactUpdate {
                artifact: core_artifact(u.artifact)?,
                append: u.append.unwrap_or(false),
                last_chunk: u.last_chunk.unwrap_or(false),
            },
        )),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn events_carry_kind_tags_and_kebab_states() {
        let mut answer = Message::assistant("hi");
        answer.message_id = "m1".into();
        let e = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::InputRequired).with_message(answer),
                is_final: true,
                metadata: looopy_core::StatusMetadata::default(),
            },
        );
        let v = serde_json::to_value(update_result(&e).unwrap()).unwrap();
        assert_eq!(v["kind"], "status-update");
        assert_eq!(v["final"], true);
        assert_eq!(v["status"]["state"], "input-required");
        assert_eq!(v["status"]["message"]["kind"], "message");
        assert_eq!(v["status"]["message"]["role"], "agent");
        assert_eq!(v["status"]["message"]["parts"][0]["kind"], "text");
        assert_eq!(v["status"]["message"]["taskId"], "t");
        // And back.
        match decode_stream_event(v).unwrap() {
            StreamEvent::Update(back) => {
                assert!(back.is_final());
                assert_eq!(back.state(), Some(TaskState::InputRequired));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn data_parts_are_objects() {
        assert_eq!(
            serde_json::to_value(part(&Part::data(json!(3)))).unwrap(),
            json!({"kind": "data", "data": {"value": 3}})
        );
    }

    #[test]
    fn send_params_are_validated() {
        let ok = json!({"message": {"kind": "message", "role": "user", "messageId": "m",
            "parts": [{"kind": "text", "text": "hi"}], "contextId": "c"},
            "configuration": {"blocking": false}});
        let p = decode_send_params(ok).unwrap();
        assert!(!p.blocking);
        assert_eq!(p.message.context_id.as_deref(), Some("c"));
        assert_eq!(p.message.message.text(), "hi");

        for bad in [
            json!({}),
            json!({"message": {"role": "agent", "messageId": "m", "parts": []}}),
            json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "nope"}]}}),
            json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "file", "file": {}}]}}),
        ] {
            assert_eq!(decode_send_params(bad).unwrap_err().code, -32602);
        }
    }
}
