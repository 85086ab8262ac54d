//! The two wire forms (`v1` = A2A 1.0, `v03` = A2A 0.3) behind one set of
//! functions chosen by [`ProtocolVersion`]. Everything else in the crate
//! speaks the neutral [`model`](crate::model) and looopy-core types; the
//! mapping table is in `docs/events.md`.

mod v03;
mod v1;

use chrono::{DateTime, Utc};
use looopy_core::{Message, TaskState};
use serde_json::{Map, Value};

use crate::RpcError;
use crate::model::{SendResponse, StreamEvent, TaskSnapshot, WireMessage};
use crate::version::ProtocolVersion;

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

/// Makes 1.0 params readable whichever ProtoJSON field names they use
/// (`history_length` or `historyLength`); 0.3 params are left as they are.
pub(crate) fn normalize_params(v: ProtocolVersion, params: &mut Value) {
    if v == ProtocolVersion::V1_0 {
        v1::camel_case_names(params);
    }
}

pub(crate) fn decode_send_params(
    v: ProtocolVersion,
    params: Value,
) -> Result<SendParams, RpcError> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_send_params(params),
        ProtocolVersion::V1_0 => v1::decode_send_params(params),
    }
}

pub(crate) fn decode_task_query(v: ProtocolVersion, params: Value) -> Result<TaskQuery, RpcError> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_task_query(params),
        ProtocolVersion::V1_0 => v1::decode_task_query(params),
    }
}

pub(crate) fn decode_list_query(params: Value) -> Result<ListQuery, RpcError> {
    v1::decode_list_query(params)
}

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
        ProtocolVersion::V0_3 => v03::encode_task(t),
        ProtocolVersion::V1_0 => v1::encode_task(t),
    }
}

pub(crate) fn encode_send_response(v: ProtocolVersion, r: &SendResponse) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03::encode_send_response(r),
        ProtocolVersion::V1_0 => v1::encode_send_response(r),
    }
}

/// The stream result for an event; `None` for events that never leave the
/// process (`internal:*`).
pub(crate) fn encode_stream_event(v: ProtocolVersion, e: &StreamEvent) -> Option<Value> {
    match v {
        ProtocolVersion::V0_3 => v03::encode_stream_event(e),
        ProtocolVersion::V1_0 => v1::encode_stream_event(e),
    }
}

pub(crate) fn encode_send_params(v: ProtocolVersion, r: &SendRequest) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03::encode_send_params(r),
        ProtocolVersion::V1_0 => v1::encode_send_params(r),
    }
}

pub(crate) fn decode_send_response(
    v: ProtocolVersion,
    value: Value,
) -> Result<SendResponse, String> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_send_response(value),
        ProtocolVersion::V1_0 => v1::decode_send_response(value),
    }
}

pub(crate) fn decode_task(v: ProtocolVersion, value: Value) -> Result<TaskSnapshot, String> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_task(value),
        ProtocolVersion::V1_0 => v1::decode_task(value),
    }
}

pub(crate) fn decode_list(value: Value) -> Result<(Vec<TaskSnapshot>, String), String> {
    v1::decode_list(value)
}

pub(crate) fn decode_stream_event(v: ProtocolVersion, value: Value) -> Result<StreamEvent, String> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_stream_event(value),
        ProtocolVersion::V1_0 => v1::decode_stream_event(value),
    }
}
