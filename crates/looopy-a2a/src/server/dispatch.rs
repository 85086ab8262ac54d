//! Method tables of both versions and the handler of each method.

use std::sync::Arc;

use axum::Json;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use looopy_core::{AuthContext, Part, Role};
use serde_json::Value;

use crate::RpcError;
use crate::jsonrpc::{self, RpcRequest};
use crate::model::{SendResponse, StreamEvent};
use crate::server::router::header_str;
use crate::server::sse::{self, StreamSpec};
use crate::server::{ServerState, progress, push};
use crate::trace;
use crate::version::ProtocolVersion;
use crate::wire::WireMessage;
use crate::wire::{self, SendParams, StreamResult};

/// An A2A operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Send,
    Stream,
    GetTask,
    ListTasks,
    Cancel,
    Subscribe,
    PushConfig,
    ExtendedCard,
}

impl Method {
    /// The method of this name in this version.
    pub(crate) fn lookup(version: ProtocolVersion, name: &str) -> Option<Method> {
        Some(match (version, name) {
            (ProtocolVersion::V1_0, "SendMessage") | (ProtocolVersion::V0_3, "message/send") => {
                Method::Send
            }
            (ProtocolVersion::V1_0, "SendStreamingMessage")
            | (ProtocolVersion::V0_3, "message/stream") => Method::Stream,
            (ProtocolVersion::V1_0, "GetTask") | (ProtocolVersion::V0_3, "tasks/get") => {
                Method::GetTask
            }
            (ProtocolVersion::V1_0, "ListTasks") => Method::ListTasks,
            (ProtocolVersion::V1_0, "CancelTask") | (ProtocolVersion::V0_3, "tasks/cancel") => {
                Method::Cancel
            }
            (ProtocolVersion::V1_0, "SubscribeToTask")
            | (ProtocolVersion::V0_3, "tasks/resubscribe") => Method::Subscribe,
            (
                ProtocolVersion::V1_0,
                "CreateTaskPushNotificationConfig"
                | "GetTaskPushNotificationConfig"
                | "ListTaskPushNotificationConfigs"
                | "DeleteTaskPushNotificationConfig",
            )
            | (
                ProtocolVersion::V0_3,
                "tasks/pushNotificationConfig/set"
                | "tasks/pushNotificationConfig/get"
                | "tasks/pushNotificationConfig/list"
                | "tasks/pushNotificationConfig/delete",
            ) => Method::PushConfig,
            (ProtocolVersion::V1_0, "GetExtendedAgentCard")
            | (ProtocolVersion::V0_3, "agent/getAuthenticatedExtendedCard") => Method::ExtendedCard,
            _ => return None,
        })
    }
}

/// Picks the version and method of a request. `header`: the `A2A-Version`
/// header as sent. A request without the header is a 0.3 request (spec
/// §3.6.2); when its method exists only in 1.0 it is served as 1.0 (as the
/// official Python SDK does: method names of the two versions do not
/// overlap). A request that names a version gets exactly that version.
pub(crate) fn resolve(
    header: Option<&str>,
    method: &str,
) -> Result<(ProtocolVersion, Method), RpcError> {
    let version =
        ProtocolVersion::from_header(header).map_err(|v| RpcError::version_not_supported(&v))?;
    if let Some(m) = Method::lookup(version, method) {
        return Ok((version, m));
    }
    let other = match version {
        ProtocolVersion::V0_3 => ProtocolVersion::V1_0,
        ProtocolVersion::V1_0 => ProtocolVersion::V0_3,
    };
    match Method::lookup(other, method) {
        Some(m) if header.is_none_or(|h| h.trim().is_empty()) => Ok((other, m)),
        Some(_) => {
            Err(RpcError::version_not_supported(version.as_str()).with_meta("method", method))
        }
        None => Err(RpcError::method_not_found(method)),
    }
}

fn json_ok(id: &Value, result: Value) -> Response {
    Json(jsonrpc::success(id, result)).into_response()
}

/// Refuses messages the agent cannot take: no parts, or parts of media types
/// the card does not accept (-32005).
fn check_message(state: &ServerState, params: &SendParams) -> Result<(), RpcError> {
    let parts = &params.message.message.parts;
    if parts.is_empty() {
        return Err(
            RpcError::invalid_params("message.parts: at least one part is required")
                .with_meta("field", "message.parts"),
        );
    }
    for part in parts {
        let media_type = match part {
            Part::Text { .. } => continue,
            Part::Data { .. } => "application/json",
            Part::File { file } => file
                .mime_type
                .as_deref()
                .unwrap_or("application/octet-stream"),
            // A part kind newer than this code: checked as opaque bytes.
            _ => "application/octet-stream",
        };
        if !state.card.accepts(media_type) {
            return Err(RpcError::content_type_not_supported(media_type));
        }
    }
    Ok(())
}

/// What a request says beside its body that streams use.
pub(crate) struct StreamOptions {
    /// `Last-Event-ID` of a subscription.
    pub(crate) last_event_id: Option<String>,
    /// Whether the tool-progress extension is active for the request.
    pub(crate) progress: bool,
}

impl StreamOptions {
    /// What the request's headers ask of `method`, the same for every
    /// binding: a subscription's `Last-Event-ID`, and the tool-progress
    /// extension, which changes only streams (it is activated, and echoed,
    /// there).
    pub(crate) fn of(state: &ServerState, method: Method, headers: &HeaderMap) -> Self {
        let last_event_id = match method {
            Method::Subscribe => header_str(headers, "last-event-id")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            _ => None,
        };
        let progress = state.tool_progress
            && matches!(method, Method::Stream | Method::Subscribe)
            && progress::requested(headers);
        StreamOptions {
            last_event_id,
            progress,
        }
    }
}

/// What an operation answers.
pub(crate) enum Answer {
    /// A result object.
    Value(Value),
    /// A stream, which each binding sends its own way.
    Stream(Opened),
}

/// A stream an operation opened.
pub(crate) enum Opened {
    /// A task's events from the log.
    Follow(Box<StreamSpec>),
    /// One item (a direct message reply), in the request's version.
    Single(StreamResult),
}

/// A JSON-RPC request: runs it and answers with the envelope. Errors of
/// streaming methods come as a plain response for 1.0 (the stream never
/// opened), as a one-item stream for 0.3 (whose clients read only SSE).
pub(crate) async fn dispatch(
    state: Arc<ServerState>,
    auth: AuthContext,
    version: ProtocolVersion,
    method: Method,
    request: RpcRequest,
    options: StreamOptions,
) -> Response {
    let RpcRequest {
        id,
        method: name,
        params,
    } = request;
    match call(&state, &auth, version, method, &name, params, options).await {
        Ok(Answer::Value(value)) => json_ok(&id, value),
        Ok(Answer::Stream(opened)) => sse::respond(&state, opened, Some(id)),
        Err(e)
            if version == ProtocolVersion::V0_3
                && matches!(method, Method::Stream | Method::Subscribe) =>
        {
            sse::error(Some(&id), &e)
        }
        Err(e) => Json(jsonrpc::failure(&id, &e)).into_response(),
    }
}

/// Runs one operation, whichever binding it came through. `name`: the
/// method's name as the request spelled it (push config methods are told
/// apart by it).
pub(crate) async fn call(
    state: &Arc<ServerState>,
    auth: &AuthContext,
    version: ProtocolVersion,
    method: Method,
    name: &str,
    params: Value,
    options: StreamOptions,
) -> Result<Answer, RpcError> {
    let value = match method {
        Method::Stream | Method::Subscribe => {
            return stream(state, auth, version, method, params, options)
                .await
                .map(Answer::Stream);
        }
        Method::Send => send(state, auth, version, params).await,
        Method::GetTask => get_task(state, auth, version, params).await,
        Method::ListTasks => list_tasks(state, auth, params).await,
        Method::Cancel => cancel(state, auth, version, params).await,
        Method::PushConfig => push::rpc(state, auth, version, name, params).await,
        Method::ExtendedCard => Err(RpcError::unsupported(
            "this agent has no extended agent card (capabilities.extendedAgentCard is false)",
        )),
    };
    value.map(Answer::Value)
}

/// The runner's direct reply to a message that names no task, when it
/// gives one: the message to answer with instead of a task.
async fn direct_reply(
    state: &ServerState,
    auth: &AuthContext,
    params: &SendParams,
) -> Result<Option<WireMessage>, RpcError> {
    if params.message.task_id.is_some() {
        return Ok(None);
    }
    let context_id = params
        .message
        .context_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let reply = state
        .runner
        .reply(&context_id, &params.message.message, auth)
        .await
        .map_err(|e| RpcError::internal(format!("turn runner: {e}")))?;
    Ok(reply.map(|mut message| {
        message.role = Role::Assistant;
        if message.message_id.is_empty() {
            message.message_id = uuid::Uuid::now_v7().to_string();
        }
        WireMessage {
            message,
            task_id: None,
            context_id: Some(context_id),
            reference_task_ids: Vec::new(),
        }
    }))
}

async fn send(
    state: &ServerState,
    auth: &AuthContext,
    v: ProtocolVersion,
    params: Value,
) -> Result<Value, RpcError> {
    let mut params = wire::decode_send_params(v, params)?;
    check_message(state, &params)?;
    if let Some(reply) = direct_reply(state, auth, &params).await? {
        return Ok(wire::encode_send_response(v, &SendResponse::Message(reply)));
    }
    let (blocking, history_length) = (params.blocking, params.history_length);
    let inline = push::inline(state, v, params.push.take()).await?;
    // No stream of this request carries tool-progress updates: none are built.
    let started = state.tasks.start(auth, params, false).await?;
    push::started(state, &started, inline).await?;
    trace::record_task(&started.task_id, None);
    if blocking {
        tokio::select! {
            () = state.tasks.wait_local(&started.task_id) => {}
            () = state.shutdown.cancelled() => {}
        }
    }
    let record = state.tasks.owned(&started.task_id, &auth.principal).await?;
    trace::record_task(&started.task_id, Some(record.status.state));
    let snapshot = state.tasks.snapshot(&record, history_length).await?;
    Ok(wire::encode_send_response(v, &SendResponse::Task(snapshot)))
}

/// The task a `GetTask`, `CancelTask` or `SubscribeToTask` request names,
/// recorded on the request's span.
fn task_query(v: ProtocolVersion, params: Value) -> Result<wire::TaskQuery, RpcError> {
    let q = wire::decode_task_query(v, params)?;
    trace::record_task(&q.id, None);
    Ok(q)
}

async fn get_task(
    state: &ServerState,
    auth: &AuthContext,
    v: ProtocolVersion,
    params: Value,
) -> Result<Value, RpcError> {
    let q = task_query(v, params)?;
    let record = state.tasks.owned(&q.id, &auth.principal).await?;
    trace::record_task(&q.id, Some(record.status.state));
    let snapshot = state.tasks.snapshot(&record, q.history_length).await?;
    Ok(wire::encode_task(v, &snapshot))
}

async fn list_tasks(
    state: &ServerState,
    auth: &AuthContext,
    params: Value,
) -> Result<Value, RpcError> {
    let q = wire::decode_list_query(params)?;
    let (page, next, total) = state.tasks.list(auth, &q).await?;
    Ok(wire::encode_list(&page, next, q.page_size, total))
}

async fn cancel(
    state: &ServerState,
    auth: &AuthContext,
    v: ProtocolVersion,
    params: Value,
) -> Result<Value, RpcError> {
    let q = task_query(v, params)?;
    let snapshot = state.tasks.cancel(auth, &q.id).await?;
    trace::record_task(&q.id, Some(snapshot.status.state));
    Ok(wire::encode_task(v, &snapshot))
}

async fn stream(
    state: &Arc<ServerState>,
    auth: &AuthContext,
    v: ProtocolVersion,
    method: Method,
    params: Value,
    options: StreamOptions,
) -> Result<Opened, RpcError> {
    let StreamOptions {
        last_event_id,
        progress,
    } = options;
    let spec = if method == Method::Stream {
        let mut params = wire::decode_send_params(v, params)?;
        check_message(state, &params)?;
        if let Some(reply) = direct_reply(state, auth, &params).await? {
            let item = wire::stream_result(v, &StreamEvent::Message(reply))
                .ok_or_else(|| RpcError::internal("a message reply has no stream form"))?;
            return Ok(Opened::Single(item));
        }
        let inline = push::inline(state, v, params.push.take()).await?;
        let started = state.tasks.start(auth, params, progress).await?;
        push::started(state, &started, inline).await?;
        trace::record_task(&started.task_id, None);
        StreamSpec {
            version: v,
            task_id: started.task_id,
            after: started.after,
            first: None,
            progress,
            next_turn: false,
            reader: Some(started.reader),
        }
    } else {
        let q = task_query(v, params)?;
        let record = state.tasks.owned(&q.id, &auth.principal).await?;
        trace::record_task(&q.id, Some(record.status.state));
        // Replaying what a client missed works on a finished task too; a
        // plain subscription to a finished task is refused (spec §3.1.6).
        if last_event_id.is_none() && record.status.state.is_terminal() {
            return Err(RpcError::unsupported(format!(
                "the task is {}: there is nothing to subscribe to",
                record.status.state.as_str()
            )));
        }
        // A task waiting for input ended its last turn: the stream shows
        // what happens next (its next turn, to the end).
        let next_turn = last_event_id.is_none() && record.status.state.ends_turn();
        let after = match last_event_id {
            Some(id) => Some(id),
            None if next_turn => record.last_event_id.clone(),
            None => record.turn_start_event_id.clone(),
        };
        // 1.0 streams start with the task as it is now.
        let first = match v {
            ProtocolVersion::V1_0 => Some(state.tasks.snapshot(&record, None).await?),
            ProtocolVersion::V0_3 => None,
        };
        // A stream that follows a turn running here reads its chunks as
        // they came.
        let reader = state.tasks.reader(&q.id);
        StreamSpec {
            version: v,
            task_id: q.id,
            after,
            first,
            progress,
            next_turn,
            reader,
        }
    };
    Ok(Opened::Follow(Box::new(spec)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_resolve_like_the_spec_says() {
        use ProtocolVersion::*;
        assert_eq!(resolve(None, "message/send").unwrap(), (V0_3, Method::Send));
        assert_eq!(
            resolve(Some("1.0"), "SendMessage").unwrap(),
            (V1_0, Method::Send)
        );
        assert_eq!(
            resolve(Some("0.3"), "tasks/resubscribe").unwrap(),
            (V0_3, Method::Subscribe)
        );
        // No header: 0.3, but a 1.0-only method is served as 1.0.
        assert_eq!(
            resolve(None, "ListTasks").unwrap(),
            (V1_0, Method::ListTasks)
        );
        // An explicit version is binding.
        assert_eq!(
            resolve(Some("1.0"), "message/send").unwrap_err().code,
            -32009
        );
        assert_eq!(resolve(Some("0.3"), "ListTasks").unwrap_err().code, -32009);
        assert_eq!(
            resolve(Some("2.0"), "SendMessage").unwrap_err().code,
            -32009
        );
        assert_eq!(resolve(Some("1.0"), "Nope").unwrap_err().code, -32601);
        assert_eq!(resolve(None, "tasks/list").unwrap_err().code, -32601);
    }
}
