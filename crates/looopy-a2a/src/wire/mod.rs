//! The two wire forms (`v1` = A2A 1.0, `v03` = A2A 0.3) behind one set of
//! functions, each choosing its version's encoder by [`ProtocolVersion`]. Everything else in the crate
//! speaks the neutral [`model`](crate::model) and looopy-core types; the
//! mapping table is in `docs/events.md`.

mod json;
mod timestamp;
mod v03;
mod v1;
mod v1_stream;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use looopy_core::{AgentEvent, Message, TaskState};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::RpcError;
use crate::model::{SendResponse, StreamEvent, TaskSnapshot};
use crate::version::ProtocolVersion;

pub use crate::model::WireMessage;

/// A message to send to a remote agent (the client's side of
/// `SendMessage` / `message/send`).
#[derive(Debug, Clone, PartialEq)]
pub struct SendRequest {
    /// The message (its role is sent as the user's).
    pub message: Message,
    /// Continue this conversation.
    pub context_id: Option<String>,
    /// Continue this task (one waiting for input).
    pub task_id: Option<String>,
    /// Wait for the turn to end (default) or return at once.
    pub blocking: bool,
    /// How many history messages the returned task should carry.
    pub history_length: Option<usize>,
    /// Request metadata.
    pub metadata: Map<String, Value>,
}

impl SendRequest {
    /// A blocking request with one user text message.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(Message::user(text))
    }

    /// A blocking request with this message.
    pub fn new(message: Message) -> Self {
        SendRequest {
            message,
            context_id: None,
            task_id: None,
            blocking: true,
            history_length: None,
            metadata: Map::new(),
        }
    }

    /// Continues a conversation.
    pub fn in_context(mut self, context_id: impl Into<String>) -> Self {
        self.context_id = Some(context_id.into());
        self
    }

    /// Continues a task.
    pub fn for_task(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// Returns at once instead of waiting for the turn to end.
    pub fn non_blocking(mut self) -> Self {
        self.blocking = false;
        self
    }
}

/// Send params as the server reads them.
#[derive(Debug, Clone)]
pub(crate) struct SendParams {
    pub(crate) message: WireMessage,
    pub(crate) blocking: bool,
    pub(crate) history_length: Option<usize>,
    pub(crate) metadata: Map<String, Value>,
    /// The push notification config sent with the message, as sent (read
    /// by `server::push`).
    pub(crate) push: Option<Value>,
}

/// A task id with an optional history length.
#[derive(Debug, Clone)]
pub(crate) struct TaskQuery {
    pub(crate) id: String,
    pub(crate) history_length: Option<usize>,
}

/// `ListTasks` params.
#[derive(Debug, Clone)]
pub(crate) struct ListQuery {
    pub(crate) context_id: Option<String>,
    pub(crate) state: Option<TaskState>,
    pub(crate) page_size: usize,
    pub(crate) offset: usize,
    pub(crate) history_length: Option<usize>,
    pub(crate) include_artifacts: bool,
    pub(crate) updated_after: Option<DateTime<Utc>>,
}

/// A requested history length: absent (no limit), 0 (none) or at most N;
/// a negative one is refused (-32602).
pub(crate) fn history_length(n: Option<i64>) -> Result<Option<usize>, RpcError> {
    match n {
        None => Ok(None),
        Some(n) => usize::try_from(n).map(Some).map_err(|_| {
            RpcError::invalid_params(format!("historyLength: must not be negative, got {n}"))
                .with_meta("field", "historyLength")
        }),
    }
}

/// A stream item (the `result` of a stream's JSON-RPC response, or the bare
/// HTTP+JSON item) in its version's typed form. It is serialised once,
/// straight into the bytes sent ([`StreamResult::frame`]), never through a
/// [`Value`].
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum StreamResult {
    /// A 1.0 `StreamResponse` (boxed, as the 0.3 form: both are large,
    /// and items queue).
    V1(Box<a2a::StreamResponse>),
    /// A logged event in the 1.0 form, written from the event itself.
    V1Update(v1_stream::StreamUpdate),
    /// A 0.3 object tagged by `kind`.
    V03(Box<v03::StreamResult03>),
}

/// A JSON-RPC success response borrowing its id and result.
#[derive(Serialize)]
struct Envelope<'a, R> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: &'a R,
}

impl StreamResult {
    /// The item's JSON text: wrapped in a JSON-RPC response with `id`, or
    /// bare (`None`, the HTTP+JSON binding).
    #[cfg(test)]
    pub(crate) fn frame(&self, id: Option<&Value>) -> String {
        let mut out = Vec::new();
        self.write_frame(id, &mut out);
        // JSON from serde_json is UTF-8.
        String::from_utf8(out).unwrap_or_else(|_| "null".to_owned())
    }

    /// [`frame`](Self::frame), written at the end of `out`.
    pub(crate) fn write_frame(&self, id: Option<&Value>, out: &mut Vec<u8>) {
        // A logged event (nearly every item of a stream) is written by its
        // own writer, the envelope around it by hand.
        if let StreamResult::V1Update(update) = self {
            match id {
                Some(id) => {
                    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                    json::value(out, id);
                    out.extend_from_slice(br#","result":"#);
                    update.write_json(out);
                    out.push(b'}');
                }
                None => update.write_json(out),
            }
            return;
        }
        let start = out.len();
        let written = match id {
            Some(id) => serde_json::to_writer(
                &mut *out,
                &Envelope {
                    jsonrpc: "2.0",
                    id,
                    result: self,
                },
            ),
            None => serde_json::to_writer(&mut *out, self),
        };
        // Serialising these types cannot fail (string keys, no custom
        // serialisers that error); `null` keeps the stream going if it did.
        if written.is_err() {
            out.truncate(start);
            out.extend_from_slice(b"null");
        }
    }

    /// The item as a JSON value (for the gRPC binding and push bodies).
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Makes 1.0 params readable whichever ProtoJSON field names they use
/// (`history_length` or `historyLength`); 0.3 params are left as they are.
pub(crate) fn normalize_params(v: ProtocolVersion, params: &mut Value) {
    match v {
        ProtocolVersion::V1_0 => v1::camel_case_names(params),
        ProtocolVersion::V0_3 => {}
    }
}

pub(crate) fn decode_send_params(
    v: ProtocolVersion,
    params: Value,
) -> Result<SendParams, RpcError> {
    match v {
        ProtocolVersion::V1_0 => v1::decode_send_params(params),
        ProtocolVersion::V0_3 => v03::decode_send_params(params),
    }
}

pub(crate) fn decode_task_query(v: ProtocolVersion, params: Value) -> Result<TaskQuery, RpcError> {
    match v {
        ProtocolVersion::V1_0 => v1::decode_task_query(params),
        ProtocolVersion::V0_3 => v03::decode_task_query(params),
    }
}

/// `ListTasks` params (the operation is 1.0 only).
pub(crate) fn decode_list_query(params: Value) -> Result<ListQuery, RpcError> {
    v1::decode_list_query(params)
}

/// A page of `ListTasks` (1.0 only).
pub(crate) fn encode_list(
    tasks: &[TaskSnapshot],
    next: Option<usize>,
    page_size: usize,
    total: usize,
) -> Value {
    v1::encode_list(tasks, next, page_size, total)
}

pub(crate) fn encode_task(v: ProtocolVersion, t: &TaskSnapshot) -> Value {
    match v {
        ProtocolVersion::V1_0 => v1::encode_task(t),
        ProtocolVersion::V0_3 => v03::encode_task(t),
    }
}

pub(crate) fn encode_send_response(v: ProtocolVersion, r: &SendResponse) -> Value {
    match v {
        ProtocolVersion::V1_0 => v1::encode_send_response(r),
        ProtocolVersion::V0_3 => v03::encode_send_response(r),
    }
}

/// The stream result for an item in its typed form; `None` for events
/// that never leave the process (`internal:*`).
pub(crate) fn stream_result(v: ProtocolVersion, e: &StreamEvent) -> Option<StreamResult> {
    match v {
        ProtocolVersion::V1_0 => v1::stream_result(e).map(|r| StreamResult::V1(Box::new(r))),
        ProtocolVersion::V0_3 => v03::stream_result(e).map(|r| StreamResult::V03(Box::new(r))),
    }
}

/// The stream result for a logged event, written from the shared event
/// itself (not from a copy in the `a2a-lf` types); `None` for events that
/// never leave the process.
pub(crate) fn update_result(v: ProtocolVersion, e: &Arc<AgentEvent>) -> Option<StreamResult> {
    match v {
        ProtocolVersion::V1_0 => v1_stream::StreamUpdate::of(e).map(StreamResult::V1Update),
        ProtocolVersion::V0_3 => v03::update_result(e).map(|r| StreamResult::V03(Box::new(r))),
    }
}

pub(crate) fn encode_send_params(v: ProtocolVersion, r: &SendRequest) -> Value {
    match v {
        ProtocolVersion::V1_0 => v1::encode_send_params(r),
        ProtocolVersion::V0_3 => v03::encode_send_params(r),
    }
}

pub(crate) fn decode_send_response(
    v: ProtocolVersion,
    value: Value,
) -> Result<SendResponse, String> {
    match v {
        ProtocolVersion::V1_0 => v1::decode_send_response(value),
        ProtocolVersion::V0_3 => v03::decode_send_response(value),
    }
}

pub(crate) fn decode_task(v: ProtocolVersion, value: Value) -> Result<TaskSnapshot, String> {
    match v {
        ProtocolVersion::V1_0 => v1::decode_task(value),
        ProtocolVersion::V0_3 => v03::decode_task(value),
    }
}

pub(crate) fn decode_list(value: Value) -> Result<(Vec<TaskSnapshot>, String), String> {
    v1::decode_list(value)
}

pub(crate) fn decode_stream_event(v: ProtocolVersion, value: Value) -> Result<StreamEvent, String> {
    match v {
        ProtocolVersion::V1_0 => v1::decode_stream_event(value),
        ProtocolVersion::V0_3 => v03::decode_stream_event(value),
    }
}

#[cfg(test)]
mod tests {
    use looopy_core::{Artifact, EventPayload, FileContent, Part, TaskStatus};
    use serde_json::json;

    use super::*;

    fn event(payload: EventPayload) -> Arc<AgentEvent> {
        Arc::new(AgentEvent::new("t-1".into(), "c-1".into(), payload))
    }

    /// One event of each kind a stream carries, with every optional field
    /// the stream form writes (metadata, names, descriptions, each part kind).
    fn events() -> Vec<Arc<AgentEvent>> {
        let mut metadata = Map::new();
        metadata.insert("k".into(), json!({"n": 1}));
        metadata.insert("a".into(), json!([true, null, "x"]));
        let file = |uri: Option<&str>, bytes: Option<&str>| {
            Part::file(FileContent {
                name: Some("f.txt".into()),
                mime_type: Some("text/plain".into()),
                uri: uri.map(Into::into),
                bytes: bytes.map(Into::into),
            })
        };
        let mut rich = Message::assistant("the report");
        rich.parts.push(Part::Data {
            data: json!({"rows": [1, 2]}),
        });
        rich.parts
            .push(file(Some("https://example.com/f.txt"), None));
        rich.parts.push(file(None, Some("aGVsbG8=")));
        rich.metadata = metadata.clone();
        vec![
            event(EventPayload::Task {
                status: TaskStatus::new(TaskState::Submitted),
                metadata: Map::new(),
            }),
            event(EventPayload::Task {
                status: TaskStatus::new(TaskState::Submitted),
                metadata: metadata.clone(),
            }),
            event(EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::Working),
                is_final: false,
                metadata: looopy_core::StatusMetadata::entries(metadata.clone()),
            }),
            event(EventPayload::ArtifactUpdate {
                artifact: Artifact {
                    artifact_id: "a-1".into(),
                    name: Some("answer".into()),
                    description: None,
                    parts: vec![Part::text("It is \"sunny\"\n")],
                    metadata: Map::new(),
                },
                append: true,
                last_chunk: false,
            }),
            event(EventPayload::ArtifactUpdate {
                artifact: Artifact {
                    artifact_id: "a-2".into(),
                    name: None,
                    description: Some("rows".into()),
                    parts: rich.parts.clone(),
                    metadata: metadata.clone(),
                },
                append: false,
                last_chunk: true,
            }),
            event(EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::InputRequired)
                    .with_message(Message::assistant("which city?")),
                is_final: true,
                metadata: looopy_core::StatusMetadata::default(),
            }),
            // Ids and text with every kind of byte JSON escapes.
            Arc::new(AgentEvent::new(
                "t-\"quoted\"\\\u{1}".into(),
                "c-\n\t\u{1f}é".into(),
                EventPayload::StatusUpdate {
                    status: TaskStatus::new(TaskState::Working)
                        .with_message(Message::assistant("line\nbreak \"q\" \u{7f} 🦀")),
                    is_final: false,
                    metadata: looopy_core::StatusMetadata::default(),
                },
            )),
            event(EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::Completed).with_message(rich),
                is_final: true,
                metadata: looopy_core::StatusMetadata {
                    report: Some(Box::new(looopy_core::TurnReport {
                        iterations: 3,
                        ..looopy_core::TurnReport::new(looopy_core::TurnEnd::MaxIterations)
                    })),
                    extra: metadata,
                },
            }),
        ]
    }

    #[test]
    fn frames_hold_the_same_json_as_the_value_path_in_both_versions() {
        for v in [ProtocolVersion::V0_3, ProtocolVersion::V1_0] {
            for e in events() {
                let result = update_result(v, &e).unwrap();
                // What the server sent before: the typed result as a value,
                // wrapped in the JSON-RPC response.
                let value = result.to_value();
                assert!(value.is_object(), "{v:?} {}: {value}", e.kind());
                for id in [json!(7), json!("req-1"), Value::Null] {
                    let framed: Value = serde_json::from_str(&result.frame(Some(&id))).unwrap();
                    assert_eq!(
                        framed,
                        json!({"jsonrpc": "2.0", "id": id, "result": value}),
                        "{v:?} {}",
                        e.kind()
                    );
                }
                let bare: Value = serde_json::from_str(&result.frame(None)).unwrap();
                assert_eq!(bare, value, "{v:?} {}", e.kind());
                // The typed item of a stream event is the logged event's
                // (in 1.0, the `a2a-lf` types against the borrowed writer).
                let item = stream_result(v, &StreamEvent::Update((*e).clone())).unwrap();
                assert_eq!(item.to_value(), value, "{v:?} {}", e.kind());
            }
        }
    }

    #[test]
    fn an_artifact_chunk_is_framed_as_each_version_spells_it() {
        let chunk = &events()[3];
        let v1: Value = serde_json::from_str(
            &update_result(ProtocolVersion::V1_0, chunk)
                .unwrap()
                .frame(Some(&json!(1))),
        )
        .unwrap();
        assert_eq!(
            v1,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"artifactUpdate": {
                "taskId": "t-1", "contextId": "c-1", "append": true, "lastChunk": false,
                "artifact": {"artifactId": "a-1", "name": "answer",
                             "parts": [{"text": "It is \"sunny\"\n"}]}}}})
        );
        let v03: Value = serde_json::from_str(
            &update_result(ProtocolVersion::V0_3, chunk)
                .unwrap()
                .frame(None),
        )
        .unwrap();
        assert_eq!(
            v03,
            json!({"kind": "artifact-update", "taskId": "t-1", "contextId": "c-1",
                   "append": true, "lastChunk": false,
                   "artifact": {"artifactId": "a-1", "name": "answer",
                                "parts": [{"kind": "text", "text": "It is \"sunny\"\n"}]}})
        );
    }

    #[test]
    fn internal_events_have_no_stream_form() {
        let e = event(EventPayload::Text { text: "x".into() });
        assert!(e.is_internal());
        for v in [ProtocolVersion::V0_3, ProtocolVersion::V1_0] {
            assert!(update_result(v, &e).is_none());
        }
    }
}
