//! The HTTP+JSON binding of A2A 1.0 (spec §11), under [`REST_PATH`]: the
//! same operations as JSON-RPC ([`Service`](crate::server::service::Service)),
//! on ordinary axum routes, with resource URLs, HTTP status codes and
//! AIP-193 error bodies ([`RpcError`]'s `IntoResponse`).
//!
//! | Route | Operation |
//! | --- | --- |
//! | `POST /message:send` | `SendMessage` |
//! | `POST /message:stream` | `SendStreamingMessage` (SSE) |
//! | `GET /tasks/{id}` | `GetTask` (`?historyLength=`) |
//! | `GET /tasks` | `ListTasks` (query parameters) |
//! | `POST /tasks/{id}:cancel` | `CancelTask` |
//! | `POST /tasks/{id}:subscribe` | `SubscribeToTask` (SSE) |
//! | `POST/GET/DELETE /tasks/{id}/pushNotificationConfigs[/{configId}]` | push configs |
//! | `GET /extendedAgentCard` | `GetExtendedAgentCard` |
//!
//! The router cannot match a parameter followed by text in one segment
//! (`{id}:cancel`), so `/tasks/{id}` takes the action after its last `:`.
//! Query parameters are read as the JSON params of the same operation,
//! through the same 1.0 readers as JSON-RPC.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::Uri;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get_service, post_service};
use axum::{Json, Router};
use serde_json::{Map, Value, json};

use crate::RpcError;
use crate::server::extract::{Extensions, JsonBody, LastEventId};
use crate::server::layers::traced;
use crate::server::push;
use crate::server::service::Call;
use crate::server::sse::{self, Opened};
use crate::server::state::ServerState;
use crate::trace;
use crate::version::ProtocolVersion;
use crate::wire;

/// Where the HTTP+JSON binding is served (the interface URL the card lists
/// is the server's base URL with this path).
pub const REST_PATH: &str = "/rest";

const V1: ProtocolVersion = ProtocolVersion::V1_0;

/// The binding's routes, to nest under [`REST_PATH`].
pub(crate) fn routes(state: &Arc<ServerState>) -> Router<Arc<ServerState>> {
    let t = |route: MethodRouter<Arc<ServerState>>| route.fallback(not_found);
    let s = state;
    Router::new()
        .route(
            "/message:send",
            t(post_service(traced(HTTP, s, send_message))),
        )
        .route(
            "/message:stream",
            t(post_service(traced(HTTP, s, send_streaming_message))),
        )
        .route("/tasks", t(get_service(traced(HTTP, s, list_tasks))))
        .route(
            "/tasks/{task}",
            t(get_service(traced(HTTP, s, get_task)).post_service(traced(HTTP, s, task_action))),
        )
        .route(
            "/tasks/{task}/pushNotificationConfigs",
            t(
                get_service(traced(HTTP, s, list_push_configs)).post_service(traced(
                    HTTP,
                    s,
                    create_push_config,
                )),
            ),
        )
        .route(
            "/tasks/{task}/pushNotificationConfigs/{config}",
            t(
                get_service(traced(HTTP, s, get_push_config)).delete_service(traced(
                    HTTP,
                    s,
                    delete_push_config,
                )),
            ),
        )
        .route(
            "/extendedAgentCard",
            t(get_service(traced(HTTP, s, extended_agent_card))),
        )
        .fallback(not_found)
}

/// `rpc.system` of this binding's spans.
const HTTP: &str = "http";

/// Other HTTP methods on a route, and other paths, are answered as
/// unknown paths (404, -32601), not with 405.
async fn not_found(uri: Uri) -> RpcError {
    not_found_at(&uri)
}

/// -32601 (HTTP 404) for a path of the binding (`uri`: as the nested
/// router sees it, without [`REST_PATH`]).
fn not_found_at(uri: &Uri) -> RpcError {
    RpcError::method_not_found(&format!("{REST_PATH}{}", uri.path()))
}

/// The query string as JSON params: numbers and booleans where the field
/// is one, enum states in their proto name (`working` or
/// `TASK_STATE_WORKING`), everything else a string.
struct QueryParams(Map<String, Value>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = RpcError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, RpcError> {
        let axum::extract::Query(pairs) =
            axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
                .map_err(|e| RpcError::invalid_params(e.body_text()))?;
        Ok(QueryParams(query_params(pairs)))
    }
}

fn query_params(query: Vec<(String, String)>) -> Map<String, Value> {
    let mut params = Map::new();
    for (key, value) in query {
        let value = match key.as_str() {
            "historyLength" | "pageSize" | "history_length" | "page_size" => value
                .parse::<i64>()
                .map_or(Value::String(value), Value::from),
            "includeArtifacts" | "include_artifacts" => match value.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(value),
            },
            "status" if !value.starts_with("TASK_STATE_") => Value::String(format!(
                "TASK_STATE_{}",
                value.to_ascii_uppercase().replace('-', "_")
            )),
            _ => Value::String(value),
        };
        params.insert(key, value);
    }
    params
}

/// A request body as a JSON object (an empty body: no fields).
fn object(JsonBody(bytes): JsonBody) -> Result<Map<String, Value>, RpcError> {
    if bytes.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_slice(&bytes).map_err(RpcError::parse_error)? {
        Value::Object(map) => Ok(map),
        _ => Err(RpcError::invalid_request("the body must be a JSON object")),
    }
}

/// 1.0 params from fields, the query's added where the fields lack them,
/// read whichever ProtoJSON spelling they use.
fn params(mut fields: Map<String, Value>, query: Map<String, Value>) -> Value {
    for (k, v) in query {
        fields.entry(k).or_insert(v);
    }
    let mut params = Value::Object(fields);
    wire::normalize_params(V1, &mut params);
    params
}

fn with_task(task: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("taskId".into(), json!(task));
    fields
}

fn stream(state: &ServerState, opened: Opened, extensions: Extensions) -> Response {
    let mut response = sse::respond(state, opened, None);
    extensions.echo(&mut response);
    response
}

async fn send_message(
    State(state): State<Arc<ServerState>>,
    call: Call,
    body: JsonBody,
) -> Result<Response, RpcError> {
    trace::record_operation("SendMessage", V1);
    let p = wire::decode_send_params(V1, params(object(body)?, Map::new()))?;
    let response = state.service().send_message(&call, p).await?;
    Ok(Json(wire::encode_send_response(V1, &response)).into_response())
}

async fn send_streaming_message(
    State(state): State<Arc<ServerState>>,
    call: Call,
    extensions: Extensions,
    body: JsonBody,
) -> Result<Response, RpcError> {
    trace::record_operation("SendStreamingMessage", V1);
    let p = wire::decode_send_params(V1, params(object(body)?, Map::new()))?;
    let opened = state.service().send_streaming_message(&call, p).await?;
    Ok(stream(&state, opened, extensions))
}

async fn list_tasks(
    State(state): State<Arc<ServerState>>,
    call: Call,
    QueryParams(query): QueryParams,
) -> Result<Response, RpcError> {
    trace::record_operation("ListTasks", V1);
    let q = wire::decode_list_query(params(Map::new(), query))?;
    let page = state.service().list_tasks(&call, q).await?;
    Ok(Json(wire::encode_list(
        &page.tasks,
        page.next,
        page.page_size,
        page.total,
    ))
    .into_response())
}

/// `GET /tasks/{id}`, and `GET /tasks/{id}:subscribe` for clients that
/// subscribe with a GET.
async fn get_task(
    State(state): State<Arc<ServerState>>,
    call: Call,
    extensions: Extensions,
    LastEventId(last_event_id): LastEventId,
    Path(task): Path<String>,
    uri: Uri,
    QueryParams(query): QueryParams,
) -> Result<Response, RpcError> {
    let mut fields = Map::new();
    match task.rsplit_once(':') {
        None => {
            trace::record_operation("GetTask", V1);
            fields.insert("id".into(), json!(task));
            let q = wire::decode_task_query(V1, params(fields, query))?;
            let task = state.service().get_task(&call, q).await?;
            Ok(Json(wire::encode_task(V1, &task)).into_response())
        }
        Some((id, "subscribe")) => {
            trace::record_operation("SubscribeToTask", V1);
            fields.insert("id".into(), json!(id));
            let q = wire::decode_task_query(V1, params(fields, query))?;
            let opened = state
                .service()
                .subscribe_to_task(&call, q, last_event_id)
                .await?;
            Ok(stream(&state, opened, extensions))
        }
        Some(_) => Err(not_found_at(&uri)),
    }
}

/// `POST /tasks/{id}:cancel` and `POST /tasks/{id}:subscribe`.
async fn task_action(
    State(state): State<Arc<ServerState>>,
    call: Call,
    extensions: Extensions,
    LastEventId(last_event_id): LastEventId,
    Path(task): Path<String>,
    uri: Uri,
    body: JsonBody,
) -> Result<Response, RpcError> {
    let Some((id, action)) = task.rsplit_once(':') else {
        return Err(not_found_at(&uri));
    };
    if !matches!(action, "cancel" | "subscribe") {
        return Err(not_found_at(&uri));
    }
    let mut fields = object(body)?;
    fields.insert("id".into(), json!(id));
    let q = wire::decode_task_query(V1, params(fields, Map::new()))?;
    if action == "cancel" {
        trace::record_operation("CancelTask", V1);
        let task = state.service().cancel_task(&call, q).await?;
        Ok(Json(wire::encode_task(V1, &task)).into_response())
    } else {
        trace::record_operation("SubscribeToTask", V1);
        let opened = state
            .service()
            .subscribe_to_task(&call, q, last_event_id)
            .await?;
        Ok(stream(&state, opened, extensions))
    }
}

async fn create_push_config(
    State(state): State<Arc<ServerState>>,
    call: Call,
    Path(task): Path<String>,
    body: JsonBody,
) -> Result<Response, RpcError> {
    trace::record_operation("CreateTaskPushNotificationConfig", V1);
    let configs = state.service().push_configs()?;
    let mut fields = object(body)?;
    fields.insert("taskId".into(), json!(task));
    let (task_id, input) = push::decode_create(V1, params(fields, Map::new()))?;
    let config = configs.create(&call, task_id, input).await?;
    Ok(Json(push::encode(V1, &config)).into_response())
}

async fn list_push_configs(
    State(state): State<Arc<ServerState>>,
    call: Call,
    Path(task): Path<String>,
    QueryParams(query): QueryParams,
) -> Result<Response, RpcError> {
    trace::record_operation("ListTaskPushNotificationConfigs", V1);
    let configs = state.service().push_configs()?;
    let q = push::decode_query(V1, params(with_task(&task), query))?;
    let list = configs.list(&call, &q).await?;
    Ok(Json(push::encode_list(V1, &list, &q)).into_response())
}

async fn get_push_config(
    State(state): State<Arc<ServerState>>,
    call: Call,
    Path((task, config)): Path<(String, String)>,
    QueryParams(query): QueryParams,
) -> Result<Response, RpcError> {
    trace::record_operation("GetTaskPushNotificationConfig", V1);
    let configs = state.service().push_configs()?;
    let mut fields = with_task(&task);
    fields.insert("id".into(), json!(config));
    let q = push::decode_query(V1, params(fields, query))?;
    let config = configs.get(&call, &q).await?;
    Ok(Json(push::encode(V1, &config)).into_response())
}

async fn delete_push_config(
    State(state): State<Arc<ServerState>>,
    call: Call,
    Path((task, config)): Path<(String, String)>,
    QueryParams(query): QueryParams,
) -> Result<Response, RpcError> {
    trace::record_operation("DeleteTaskPushNotificationConfig", V1);
    let configs = state.service().push_configs()?;
    let mut fields = with_task(&task);
    fields.insert("id".into(), json!(config));
    let q = push::decode_query(V1, params(fields, query))?;
    configs.delete(&call, q).await?;
    Ok(Json(Value::Null).into_response())
}

async fn extended_agent_card(
    State(state): State<Arc<ServerState>>,
    call: Call,
) -> Result<Response, RpcError> {
    trace::record_operation("GetExtendedAgentCard", V1);
    let card = state.service().extended_agent_card(&call)?;
    Ok(Json(card).into_response())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn q(query: &str) -> Map<String, Value> {
        let uri: Uri = format!("/x?{query}").parse().unwrap();
        let axum::extract::Query(pairs) =
            axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri).unwrap();
        query_params(pairs)
    }

    #[test]
    fn query_parameters_read_as_the_operation_s_params() {
        assert_eq!(
            params(Map::new(), q("historyLength=2&id=t1")),
            json!({"id": "t1", "historyLength": 2})
        );
        assert_eq!(
            params(
                Map::new(),
                q("contextId=c%201&status=input-required&pageSize=5&includeArtifacts=true")
            ),
            json!({"contextId": "c 1", "status": "TASK_STATE_INPUT_REQUIRED",
                   "pageSize": 5, "includeArtifacts": true})
        );
        // Fields of the path win over the query's.
        let mut fields = with_task("t1");
        fields.insert("id".into(), json!("p1"));
        assert_eq!(
            params(fields, q("taskId=other")),
            json!({"taskId": "t1", "id": "p1"})
        );
    }
}
