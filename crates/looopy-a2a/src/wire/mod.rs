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

use looopy_core::AgentEvent;
use serde::Serialize;
use serde_json::Value;

use crate::RpcError;
use crate::model::{
    ListQuery, SendParams, SendRequest, SendResponse, StreamEvent, TaskQuery, TaskSnapshot,
};
use crate::version::ProtocolVersion;

/// A stream item (the `result` of a stream's JSON-RPC response, or the bare
/// HTTP+JSON item) in its version's typed form. It is serialised once,
/// straight into the bytes sent ([`StreamResult::frame`]), never through a
/// [`Value`].
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum StreamResult {
    /// A 1.0 `StreamResponse` holding a task or a message (boxed, as the
    /// 0.3 form: both are large, and items queue).
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

/// The stream result for an item; `None` for events that never leave the
/// process (`internal:*`). An event gets the form [`update_result`] gives
/// it.
pub(crate) fn stream_result(v: ProtocolVersion, e: &StreamEvent) -> Option<StreamResult> {
    match v {
        ProtocolVersion::V1_0 => match e {
            StreamEvent::Task(t) => Some(StreamResult::V1(Box::new(v1::stream_task(t)))),
            StreamEvent::Message(m) => Some(StreamResult::V1(Box::new(v1::stream_message(m)))),
            StreamEvent::Update(event) => update_result(v, &Arc::new(event.clone())),
        },
        ProtocolVersion::V0_3 => v03::stream_result(e).map(|r| StreamResult::V03(Box::new(r))),
    }
}

/// The stream result for a logged event, written from the shared event
/// itself; `None` for events that never leave the process. In 1.0 this is
/// the one encoder of an event (`v1_stream`), tested against the official
/// `a2a-lf` types.
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
    use chrono::{TimeZone, Utc};
    use looopy_core::{Artifact, EventPayload, FileContent, Message, Part, TaskState, TaskStatus};
    use serde_json::{Map, json};

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
                blob: None,
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
            // Timestamps on a whole second (no fraction written in 1.0) and
            // with microseconds (cut to milliseconds).
            event(EventPayload::Task {
                status: TaskStatus {
                    timestamp: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
                    ..TaskStatus::new(TaskState::Working)
                },
                metadata: Map::new(),
            }),
            event(EventPayload::StatusUpdate {
                status: TaskStatus {
                    timestamp: Utc.timestamp_micros(1_767_323_045_123_456).unwrap(),
                    ..TaskStatus::new(TaskState::Failed)
                },
                is_final: true,
                metadata: looopy_core::StatusMetadata::default(),
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
                // A stream event's item is the logged event's.
                let item = stream_result(v, &StreamEvent::Update((*e).clone())).unwrap();
                assert_eq!(item.to_value(), value, "{v:?} {}", e.kind());
            }
        }
    }

    #[test]
    fn the_1_0_writer_writes_what_the_official_types_serialize_to() {
        for e in events() {
            let written: Value = serde_json::from_str(
                &update_result(ProtocolVersion::V1_0, &e)
                    .unwrap()
                    .frame(None),
            )
            .unwrap();
            let official = serde_json::to_value(v1::stream_response(&e).unwrap()).unwrap();
            assert_eq!(written, official, "{}", e.kind());
            // And the official types read it back.
            let read: a2a::StreamResponse = serde_json::from_value(written).unwrap();
            assert_eq!(
                serde_json::to_value(read).unwrap(),
                official,
                "{}",
                e.kind()
            );
        }
    }

    #[test]
    fn a_file_whose_bytes_are_not_base64_is_written_as_the_official_types_write_it() {
        let bad = Part::file(FileContent {
            blob: None,
            name: Some("f.bin".into()),
            mime_type: None,
            uri: None,
            bytes: Some("not base64!".into()),
        });
        let e = event(EventPayload::ArtifactUpdate {
            artifact: Artifact::new("a", vec![bad]),
            append: false,
            last_chunk: true,
        });
        let written = update_result(ProtocolVersion::V1_0, &e).unwrap().to_value();
        assert_eq!(
            written["artifactUpdate"]["artifact"]["parts"][0]["text"],
            "[file f.bin: its bytes are not valid base64]"
        );
        assert_eq!(
            written,
            serde_json::to_value(v1::stream_response(&e).unwrap()).unwrap()
        );
    }

    #[test]
    fn an_artifact_chunk_is_framed_as_each_version_spells_it() {
        let chunk = &events()[5];
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
