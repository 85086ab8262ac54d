//! The HTTP+JSON binding of A2A 1.0 (spec §11), under [`REST_PATH`]: the
//! same operations as JSON-RPC, on the same tasks, event log and auth
//! ([`dispatch::call`]), with resource URLs, HTTP status codes and AIP-193
//! error bodies.
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

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method as HttpMethod, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Map, Value, json};
use tracing::Instrument;

use crate::RpcError;
use crate::jsonrpc::UNAUTHENTICATED;
use crate::server::ServerState;
use crate::server::dispatch::{self, Answer, Method, StreamOptions};
use crate::server::progress::{EXTENSIONS_HEADER, TOOL_PROGRESS_EXTENSION};
use crate::server::router::{content_type_error, header_str};
use crate::server::sse;
use crate::trace;
use crate::version::{ProtocolVersion, VERSION_HEADER};
use crate::wire;

/// Where the HTTP+JSON binding is served (the interface URL the card lists
/// is the server's base URL with this path).
pub const REST_PATH: &str = "/rest";

/// Adds the binding's routes.
pub(crate) fn routes(router: Router<Arc<ServerState>>) -> Router<Arc<ServerState>> {
    router.route(&format!("{REST_PATH}/{{*path}}"), any(handle))
}

/// The HTTP status and the `google.rpc.Code` name of an error (spec §5.4).
fn status_of(e: &RpcError) -> (StatusCode, &'static str) {
    use a2a::error_code as c;
    match e.code {
        c::TASK_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        c::TASK_NOT_CANCELABLE => (StatusCode::CONFLICT, "FAILED_PRECONDITION"),
        c::PUSH_NOTIFICATION_NOT_SUPPORTED | c::UNSUPPORTED_OPERATION => {
            (StatusCode::BAD_REQUEST, "UNIMPLEMENTED")
        }
        c::CONTENT_TYPE_NOT_SUPPORTED => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "INVALID_ARGUMENT"),
        c::INVALID_AGENT_RESPONSE => (StatusCode::BAD_GATEWAY, "INTERNAL"),
        c::EXTENDED_CARD_NOT_CONFIGURED | c::EXTENSION_SUPPORT_REQUIRED => {
            (StatusCode::BAD_REQUEST, "FAILED_PRECONDITION")
        }
        c::VERSION_NOT_SUPPORTED => (StatusCode::BAD_REQUEST, "UNIMPLEMENTED"),
        c::METHOD_NOT_FOUND => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        c::PARSE_ERROR | c::INVALID_REQUEST | c::INVALID_PARAMS => {
            (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT")
        }
        UNAUTHENTICATED => (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
    }
}

/// The AIP-193 body of an error: `{"error": {code, status, message,
/// details}}`, the details holding the `google.rpc.ErrorInfo` (spec §11.6).
pub(crate) fn error_body(e: &RpcError) -> Value {
    let (status, name) = status_of(e);
    json!({"error": {
        "code": status.as_u16(),
        "status": name,
        "message": e.message,
        "details": e.data.clone().unwrap_or_else(|| json!([])),
    }})
}

fn error_response(e: &RpcError) -> Response {
    let (status, _) = status_of(e);
    let mut response = (status, axum::Json(error_body(e))).into_response();
    if e.code == UNAUTHENTICATED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"a2a\""),
        );
    }
    response
}

/// The query string as JSON params: numbers and booleans where the field
/// is one, enum states in their proto name (`working` or
/// `TASK_STATE_WORKING`), everything else a string.
fn query_params(query: &[(String, String)]) -> Map<String, Value> {
    let mut params = Map::new();
    for (key, value) in query.iter().cloned() {
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

/// A request resolved to an operation: the method, its name (push config
/// methods are routed by it) and its params.
struct Operation {
    method: Method,
    name: &'static str,
    params: Value,
}

fn not_found(path: &str) -> RpcError {
    RpcError::method_not_found(&format!("{REST_PATH}/{path}"))
}

/// Maps method and path to an operation. `body`: the request's JSON body
/// (an empty object for requests without one).
fn operation(
    http: &HttpMethod,
    path: &str,
    query: &[(String, String)],
    body: Value,
) -> Result<Operation, RpcError> {
    let query = query_params(query);
    let with_query = |mut params: Map<String, Value>| {
        for (k, v) in &query {
            params.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(params)
    };
    let body_object = |body: Value| match body {
        Value::Object(map) => Ok(map),
        _ => Err(RpcError::invalid_request("the body must be a JSON object")),
    };
    let op = |method, name, params| {
        Ok(Operation {
            method,
            name,
            params,
        })
    };
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    match (http, segments.as_slice()) {
        (&HttpMethod::POST, ["message:send"]) => op(Method::Send, "SendMessage", body),
        (&HttpMethod::POST, ["message:stream"]) => op(Method::Stream, "SendStreamingMessage", body),
        (&HttpMethod::GET, ["tasks"]) => op(Method::ListTasks, "ListTasks", with_query(Map::new())),
        (&HttpMethod::GET, ["extendedAgentCard"]) => {
            op(Method::ExtendedCard, "GetExtendedAgentCard", json!({}))
        }
        (_, ["tasks", task, "pushNotificationConfigs", rest @ ..]) => {
            let mut params = Map::new();
            params.insert("taskId".into(), json!(task));
            let name = match (http, rest) {
                (&HttpMethod::POST, []) => {
                    let mut body = body_object(body)?;
                    body.insert("taskId".into(), json!(task));
                    return op(
                        Method::PushConfig,
                        "CreateTaskPushNotificationConfig",
                        Value::Object(body),
                    );
                }
                (&HttpMethod::GET, []) => "ListTaskPushNotificationConfigs",
                (&HttpMethod::GET, [id]) => {
                    params.insert("id".into(), json!(id));
                    "GetTaskPushNotificationConfig"
                }
                (&HttpMethod::DELETE, [id]) => {
                    params.insert("id".into(), json!(id));
                    "DeleteTaskPushNotificationConfig"
                }
                _ => return Err(not_found(path)),
            };
            op(Method::PushConfig, name, with_query(params))
        }
        (_, ["tasks", task]) => {
            let (id, action) = match task.rsplit_once(':') {
                Some((id, action)) => (id, Some(action)),
                None => (*task, None),
            };
            let mut params = match action {
                Some(_) if *http == HttpMethod::POST => body_object(body)?,
                _ => Map::new(),
            };
            params.insert("id".into(), json!(id));
            match (http, action) {
                (&HttpMethod::GET, None) => op(Method::GetTask, "GetTask", with_query(params)),
                (&HttpMethod::POST, Some("cancel")) => {
                    op(Method::Cancel, "CancelTask", Value::Object(params))
                }
                (&HttpMethod::POST | &HttpMethod::GET, Some("subscribe")) => {
                    op(Method::Subscribe, "SubscribeToTask", Value::Object(params))
                }
                _ => Err(not_found(path)),
            }
        }
        _ => Err(not_found(path)),
    }
}

/// The version a request names (header, else query parameter). This
/// interface serves 1.0 only: no version means 1.0 here, another one is
/// refused (-32009, HTTP 400).
pub(crate) fn version(
    headers: &HeaderMap,
    query: &[(String, String)],
) -> Result<ProtocolVersion, RpcError> {
    let named = header_str(headers, VERSION_HEADER).or_else(|| {
        query
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
            .map(|(_, v)| v.as_str())
    });
    match named.map(str::trim) {
        None | Some("") => Ok(ProtocolVersion::V1_0),
        Some(v) => match v.parse() {
            Ok(ProtocolVersion::V1_0) => Ok(ProtocolVersion::V1_0),
            _ => Err(RpcError::version_not_supported(v)),
        },
    }
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    http: HttpMethod,
    Path(path): Path<String>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let query = match query {
        Ok(Query(q)) => q,
        Err(e) => return error_response(&RpcError::invalid_params(e.body_text())),
    };
    match handle_inner(state, &http, &path, &query, &headers, body).await {
        Ok(response) => response,
        Err(e) => error_response(&e),
    }
}

async fn handle_inner(
    state: Arc<ServerState>,
    http: &HttpMethod,
    path: &str,
    query: &[(String, String)],
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, RpcError> {
    let auth = state
        .auth
        .authenticate(headers)
        .ok_or_else(RpcError::unauthenticated)?;
    let limit = state.max_body_bytes;
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
        RpcError::invalid_request(format!("payload too large (the limit is {limit} bytes)"))
    })?;
    let version = version(headers, query)?;
    let body = if bytes.is_empty() {
        json!({})
    } else {
        if let Some(e) = content_type_error(headers) {
            return Err(e);
        }
        serde_json::from_slice(&bytes).map_err(RpcError::parse_error)?
    };
    let Operation {
        method,
        name,
        mut params,
    } = operation(http, path, query, body)?;
    wire::normalize_params(version, &mut params);
    let span = trace::request_span(name, version, headers);
    let options = StreamOptions::of(&state, method, headers);
    let progress = options.progress;
    let answer = dispatch::call(&state, &auth, version, method, name, params, options)
        .instrument(span)
        .await?;
    let mut response = match answer {
        Answer::Value(value) => axum::Json(value).into_response(),
        Answer::Stream(opened) => sse::respond(&state, opened, None),
    };
    if progress {
        response.headers_mut().insert(
            EXTENSIONS_HEADER,
            HeaderValue::from_static(TOOL_PROGRESS_EXTENSION),
        );
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn q(query: &str) -> Vec<(String, String)> {
        serde_urlencoded_pairs(query)
    }

    /// What axum's `Query` makes of a query string.
    fn serde_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
        let uri: axum::http::Uri = format!("/x?{query}").parse().unwrap();
        Query::<Vec<(String, String)>>::try_from_uri(&uri)
            .unwrap()
            .0
    }

    fn route(http: HttpMethod, path: &str, query: &str) -> (Method, &'static str, Value) {
        let op = operation(&http, path, &q(query), json!({})).unwrap();
        (op.method, op.name, op.params)
    }

    #[test]
    fn paths_map_to_operations() {
        assert_eq!(route(HttpMethod::POST, "message:send", "").0, Method::Send);
        assert_eq!(
            route(HttpMethod::GET, "tasks/t1", "historyLength=2"),
            (
                Method::GetTask,
                "GetTask",
                json!({"id": "t1", "historyLength": 2})
            )
        );
        assert_eq!(
            route(HttpMethod::POST, "tasks/t1:cancel", ""),
            (Method::Cancel, "CancelTask", json!({"id": "t1"}))
        );
        assert_eq!(
            route(HttpMethod::POST, "tasks/t1:subscribe", "").0,
            Method::Subscribe
        );
        assert_eq!(
            route(
                HttpMethod::GET,
                "tasks",
                "contextId=c%201&status=input-required&pageSize=5"
            ),
            (
                Method::ListTasks,
                "ListTasks",
                json!({"contextId": "c 1", "status": "TASK_STATE_INPUT_REQUIRED", "pageSize": 5})
            )
        );
        assert_eq!(
            route(
                HttpMethod::DELETE,
                "tasks/t1/pushNotificationConfigs/p1",
                ""
            ),
            (
                Method::PushConfig,
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": "t1", "id": "p1"})
            )
        );
        for (http, path) in [
            (HttpMethod::GET, "message:send"),
            (HttpMethod::POST, "tasks/t1"),
            (HttpMethod::POST, "tasks/t1:pause"),
            (HttpMethod::GET, "nope"),
        ] {
            let e = operation(&http, path, &[], json!({})).err().unwrap();
            assert_eq!(status_of(&e).0, StatusCode::NOT_FOUND, "{http} {path}");
        }
    }

    #[test]
    fn errors_have_the_aip193_shape() {
        let body = error_body(&RpcError::task_not_found("t1"));
        assert_eq!(body["error"]["code"], 404);
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(
            status_of(&RpcError::content_type_not_supported("a/b")).0,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert_eq!(
            status_of(&RpcError::task_not_cancelable("t", "completed")).0,
            StatusCode::CONFLICT
        );
    }

    #[test]
    fn only_1_0_is_served() {
        let mut h = HeaderMap::new();
        assert_eq!(version(&h, &[]).unwrap(), ProtocolVersion::V1_0);
        assert_eq!(version(&h, &q("A2A-Version=0.3")).unwrap_err().code, -32009);
        h.insert(VERSION_HEADER, HeaderValue::from_static("1.0"));
        assert_eq!(version(&h, &[]).unwrap(), ProtocolVersion::V1_0);
        h.insert(VERSION_HEADER, HeaderValue::from_static("9.9"));
        assert_eq!(version(&h, &[]).unwrap_err().code, -32009);
    }
}
