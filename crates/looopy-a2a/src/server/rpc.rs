//! The JSON-RPC binding of both versions: the method names of each
//! ([`Operation::lookup`]), the version a request is served in
//! ([`resolve`]), and the endpoint ([`endpoint`]), which reads the params
//! in that version, runs the [`Service`](crate::server::service::Service)
//! operation and writes its result in the same version.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::RpcError;
use crate::jsonrpc::{self, RpcRequest};
use crate::server::error::rpc_failure;
use crate::server::extract::{Caller, Extensions, JsonBody, LastEventId, NamedVersion};
use crate::server::push;
use crate::server::service::Call;
use crate::server::sse::{self, Opened};
use crate::server::state::ServerState;
use crate::trace;
use crate::version::ProtocolVersion;
use crate::wire;

/// An A2A operation, as a JSON-RPC method of either version names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreatePushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
    GetExtendedAgentCard,
}

impl Operation {
    /// The operation of this method name in this version.
    pub(crate) fn lookup(version: ProtocolVersion, name: &str) -> Option<Operation> {
        use Operation::*;
        Some(match version {
            ProtocolVersion::V1_0 => match name {
                "SendMessage" => SendMessage,
                "SendStreamingMessage" => SendStreamingMessage,
                "GetTask" => GetTask,
                "ListTasks" => ListTasks,
                "CancelTask" => CancelTask,
                "SubscribeToTask" => SubscribeToTask,
                "CreateTaskPushNotificationConfig" => CreatePushConfig,
                "GetTaskPushNotificationConfig" => GetPushConfig,
                "ListTaskPushNotificationConfigs" => ListPushConfigs,
                "DeleteTaskPushNotificationConfig" => DeletePushConfig,
                "GetExtendedAgentCard" => GetExtendedAgentCard,
                _ => return None,
            },
            ProtocolVersion::V0_3 => match name {
                "message/send" => SendMessage,
                "message/stream" => SendStreamingMessage,
                "tasks/get" => GetTask,
                "tasks/cancel" => CancelTask,
                "tasks/resubscribe" => SubscribeToTask,
                "tasks/pushNotificationConfig/set" => CreatePushConfig,
                "tasks/pushNotificationConfig/get" => GetPushConfig,
                "tasks/pushNotificationConfig/list" => ListPushConfigs,
                "tasks/pushNotificationConfig/delete" => DeletePushConfig,
                "agent/getAuthenticatedExtendedCard" => GetExtendedAgentCard,
                _ => return None,
            },
        })
    }

    /// Whether the operation answers with a stream.
    fn streams(self) -> bool {
        matches!(
            self,
            Operation::SendStreamingMessage | Operation::SubscribeToTask
        )
    }
}

/// Picks the version and operation of a request. `named`: the version its
/// `A2A-Version` header names. A request without the header is a 0.3
/// request (spec §3.6.2); when its method exists only in 1.0 it is served
/// as 1.0 (as the official Python SDK does: method names of the two
/// versions do not overlap). A request that names a version gets exactly
/// that version.
pub(crate) fn resolve(
    named: Option<ProtocolVersion>,
    method: &str,
) -> Result<(ProtocolVersion, Operation), RpcError> {
    let version = named.unwrap_or(ProtocolVersion::V0_3);
    if let Some(op) = Operation::lookup(version, method) {
        return Ok((version, op));
    }
    let other = match version {
        ProtocolVersion::V0_3 => ProtocolVersion::V1_0,
        ProtocolVersion::V1_0 => ProtocolVersion::V0_3,
    };
    match Operation::lookup(other, method) {
        Some(op) if named.is_none() => Ok((other, op)),
        Some(_) => {
            Err(RpcError::version_not_supported(version.as_str()).with_meta("method", method))
        }
        None => Err(RpcError::method_not_found(method)),
    }
}

/// What an operation answers.
enum Answer {
    /// A result object.
    Value(Value),
    /// A stream.
    Stream(Opened),
}

/// The JSON-RPC endpoint. Refusals come in the order a request is read:
/// a body over the limit (413), missing credentials (401), a body that is
/// not JSON, not a request, or of a method or version this server does
/// not serve (200, with the request's id once it is known).
pub(crate) async fn endpoint(
    State(state): State<Arc<ServerState>>,
    caller: Result<Caller, RpcError>,
    named: Result<NamedVersion, RpcError>,
    extensions: Extensions,
    LastEventId(last_event_id): LastEventId,
    body: Result<JsonBody, RpcError>,
) -> Response {
    let body = match body {
        Err(e) if e.class().http == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
            return rpc_failure(&Value::Null, &e);
        }
        body => body,
    };
    let auth = match caller {
        Ok(Caller(auth)) => auth,
        Err(e) => return rpc_failure(&Value::Null, &e),
    };
    let JsonBody(bytes) = match body {
        Ok(body) => body,
        Err(e) => return rpc_failure(&Value::Null, &e),
    };
    let RpcRequest {
        id,
        method,
        mut params,
    } = match jsonrpc::parse_request(&bytes) {
        Ok(r) => r,
        Err((id, e)) => return rpc_failure(&id, &e),
    };
    let resolved = named.and_then(|NamedVersion(named)| resolve(named, &method));
    let (version, op) = match resolved {
        Ok(found) => found,
        Err(e) => return rpc_failure(&id, &e),
    };
    wire::normalize_params(version, &mut params);
    trace::record_operation(&method, version);
    let call = Call {
        auth,
        version,
        progress: extensions.progress && op.streams(),
    };
    let mut response = match run(&state, &call, op, params, last_event_id).await {
        Ok(Answer::Value(value)) => Json(jsonrpc::success(&id, value)).into_response(),
        Ok(Answer::Stream(opened)) => sse::respond(&state, opened, Some(id)),
        // 0.3 clients read a streaming method's answer only as SSE: its
        // error is a one-item stream. In 1.0 the stream never opened.
        Err(e) if version == ProtocolVersion::V0_3 && op.streams() => sse::error(Some(&id), &e),
        Err(e) => rpc_failure(&id, &e),
    };
    if call.progress {
        extensions.echo(&mut response);
    }
    response
}

/// Reads the params of `op` in the call's version, runs it, and writes its
/// result in that version.
async fn run(
    state: &Arc<ServerState>,
    call: &Call,
    op: Operation,
    params: Value,
    last_event_id: Option<String>,
) -> Result<Answer, RpcError> {
    let service = state.service();
    let v = call.version;
    let value = match op {
        Operation::SendMessage => {
            let response = service
                .send_message(call, wire::decode_send_params(v, params)?)
                .await?;
            wire::encode_send_response(v, &response)
        }
        Operation::SendStreamingMessage => {
            let params = wire::decode_send_params(v, params)?;
            let opened = service.send_streaming_message(call, params).await?;
            return Ok(Answer::Stream(opened));
        }
        Operation::GetTask => {
            let task = service
                .get_task(call, wire::decode_task_query(v, params)?)
                .await?;
            wire::encode_task(v, &task)
        }
        Operation::ListTasks => {
            let page = service
                .list_tasks(call, wire::decode_list_query(params)?)
                .await?;
            wire::encode_list(&page.tasks, page.next, page.page_size, page.total)
        }
        Operation::CancelTask => {
            let task = service
                .cancel_task(call, wire::decode_task_query(v, params)?)
                .await?;
            wire::encode_task(v, &task)
        }
        Operation::SubscribeToTask => {
            let q = wire::decode_task_query(v, params)?;
            let opened = service.subscribe_to_task(call, q, last_event_id).await?;
            return Ok(Answer::Stream(opened));
        }
        Operation::CreatePushConfig => {
            let configs = service.push_configs()?;
            let (task_id, input) = push::decode_create(v, params)?;
            let config = configs.create(call, task_id, input).await?;
            push::encode(v, &config)
        }
        Operation::GetPushConfig => {
            let configs = service.push_configs()?;
            let q = push::decode_query(v, params)?;
            push::encode(v, &configs.get(call, &q).await?)
        }
        Operation::ListPushConfigs => {
            let configs = service.push_configs()?;
            let q = push::decode_query(v, params)?;
            push::encode_list(v, &configs.list(call, &q).await?, &q)
        }
        Operation::DeletePushConfig => {
            let configs = service.push_configs()?;
            configs.delete(call, push::decode_query(v, params)?).await?;
            Value::Null
        }
        Operation::GetExtendedAgentCard => service.extended_agent_card(call)?,
    };
    Ok(Answer::Value(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_resolve_like_the_spec_says() {
        use Operation::*;
        use ProtocolVersion::*;
        assert_eq!(resolve(None, "message/send").unwrap(), (V0_3, SendMessage));
        assert_eq!(
            resolve(Some(V1_0), "SendMessage").unwrap(),
            (V1_0, SendMessage)
        );
        assert_eq!(
            resolve(Some(V0_3), "tasks/resubscribe").unwrap(),
            (V0_3, SubscribeToTask)
        );
        assert_eq!(
            resolve(Some(V0_3), "tasks/pushNotificationConfig/delete").unwrap(),
            (V0_3, DeletePushConfig)
        );
        // No header: 0.3, but a 1.0-only method is served as 1.0.
        assert_eq!(resolve(None, "ListTasks").unwrap(), (V1_0, ListTasks));
        // An explicit version is binding.
        assert_eq!(
            resolve(Some(V1_0), "message/send").unwrap_err().code,
            -32009
        );
        assert_eq!(resolve(Some(V0_3), "ListTasks").unwrap_err().code, -32009);
        assert_eq!(resolve(Some(V1_0), "Nope").unwrap_err().code, -32601);
        assert_eq!(resolve(None, "tasks/list").unwrap_err().code, -32601);
    }
}
