//! JSON-RPC 2.0 envelopes and the A2A error codes, shared by both protocol
//! versions, the server and the client.

use std::fmt;

use a2a::error_code;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// `data[].@type` of the `ErrorInfo` detail every error carries (spec §9.5).
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// `ErrorInfo.domain` of A2A errors.
const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// Server-defined code (JSON-RPC range -32000..-32099, unused by A2A) of a
/// request without valid credentials; the HTTP status is 401.
pub const UNAUTHENTICATED: i32 = -32000;

/// `ErrorInfo.reason` of a request whose body is over the server's limit
/// (code -32600, HTTP 413).
pub(crate) const PAYLOAD_TOO_LARGE: &str = "PAYLOAD_TOO_LARGE";

/// A JSON-RPC error object: what a failed call answers.
///
/// Codes follow spec §5.4 / §9.5: -32700 parse error, -32600 invalid request,
/// -32601 method not found, -32602 invalid params, -32603 internal error,
/// -32001 task not found, -32002 task not cancelable, -32003 push
/// notifications not supported, -32004 unsupported operation, -32005 content
/// type not supported, -32007 extended card not configured, -32009 version
/// not supported; Looopy adds [`UNAUTHENTICATED`] (-32000).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub struct RpcError {
    /// The error code.
    pub code: i32,
    /// A human-readable description.
    pub message: String,
    /// Details: an array of objects with an `@type` (the server sends a
    /// `google.rpc.ErrorInfo` with the reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl RpcError {
    /// An error with an `ErrorInfo` detail naming the reason of `code`.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        let reason = match code {
            UNAUTHENTICATED => "UNAUTHENTICATED",
            c => a2a::error_reason(c),
        };
        RpcError {
            code,
            message: message.into(),
            data: Some(json!([{
                "@type": ERROR_INFO_TYPE,
                "reason": reason,
                "domain": ERROR_DOMAIN,
            }])),
        }
    }

    /// Adds `key: value` to the `ErrorInfo` metadata (a string map).
    pub fn with_meta(mut self, key: &str, value: impl Into<String>) -> Self {
        if let Some(Value::Array(details)) = &mut self.data
            && let Some(Value::Object(info)) = details.first_mut()
        {
            let meta = info
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(key.to_owned(), Value::String(value.into()));
            }
        }
        self
    }

    /// -32700: the body is not JSON.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(
            error_code::PARSE_ERROR,
            format!("Invalid JSON payload: {detail}"),
        )
    }

    /// -32600: JSON, but not a valid JSON-RPC request.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(
            error_code::INVALID_REQUEST,
            format!("Invalid JSON-RPC request: {detail}"),
        )
    }

    /// -32600 for a body over the server's limit: its `ErrorInfo` reason is
    /// `PAYLOAD_TOO_LARGE`, which the HTTP bindings answer with 413.
    pub fn payload_too_large(limit: usize) -> Self {
        let mut e = Self::invalid_request(format!(
            "payload too large (the limit is {limit} bytes; send a smaller body)"
        ));
        if let Some(Value::Array(details)) = &mut e.data
            && let Some(Value::Object(info)) = details.first_mut()
        {
            info.insert("reason".into(), Value::from(PAYLOAD_TOO_LARGE));
        }
        e
    }

    /// -32601: no such method (in the request's protocol version).
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            error_code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
        .with_meta("method", method)
    }

    /// -32602: the parameters do not fit the method.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(
            error_code::INVALID_PARAMS,
            format!("Invalid parameters: {detail}"),
        )
    }

    /// -32603: the server failed.
    pub fn internal(detail: impl fmt::Display) -> Self {
        Self::new(
            error_code::INTERNAL_ERROR,
            format!("Internal error: {detail}"),
        )
    }

    /// -32001: no such task, or not visible to the caller.
    pub fn task_not_found(task_id: &str) -> Self {
        Self::new(error_code::TASK_NOT_FOUND, "Task not found").with_meta("taskId", task_id)
    }

    /// -32002: the task already ended.
    pub fn task_not_cancelable(task_id: &str, state: &str) -> Self {
        Self::new(
            error_code::TASK_NOT_CANCELABLE,
            format!("Task cannot be canceled: it is {state}"),
        )
        .with_meta("taskId", task_id)
    }

    /// -32003: push notifications are not supported.
    pub fn push_not_supported() -> Self {
        Self::new(
            error_code::PUSH_NOTIFICATION_NOT_SUPPORTED,
            "Push Notification is not supported",
        )
    }

    /// -32004: the operation (or this use of it) is not supported.
    pub fn unsupported(detail: impl fmt::Display) -> Self {
        Self::new(
            error_code::UNSUPPORTED_OPERATION,
            format!("This operation is not supported: {detail}"),
        )
    }

    /// -32005: a part's media type is not accepted.
    pub fn content_type_not_supported(media_type: &str) -> Self {
        Self::new(
            error_code::CONTENT_TYPE_NOT_SUPPORTED,
            format!("Incompatible content types: {media_type} is not accepted"),
        )
        .with_meta("mediaType", media_type)
    }

    /// -32009: the `A2A-Version` is not one this server speaks.
    pub fn version_not_supported(version: &str) -> Self {
        Self::new(
            error_code::VERSION_NOT_SUPPORTED,
            format!("A2A version '{version}' is not supported; supported: 1.0, 0.3"),
        )
        .with_meta("version", version)
    }

    /// -32000: missing or invalid credentials (HTTP 401).
    pub fn unauthenticated() -> Self {
        Self::new(
            UNAUTHENTICATED,
            "Authentication required: send `Authorization: Bearer <token>` or `X-API-Key: <key>`",
        )
    }

    /// The reason of the `ErrorInfo` detail, when present.
    pub fn reason(&self) -> Option<&str> {
        self.data
            .as_ref()?
            .as_array()?
            .iter()
            .find_map(|d| d.get("reason")?.as_str())
    }
}

/// A parsed request: id (string, integer or null), method, params.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcRequest {
    pub(crate) id: Value,
    pub(crate) method: String,
    pub(crate) params: Value,
}

/// Parses a request body. On failure returns the id to answer with (null
/// when it could not be read) and the error.
pub(crate) fn parse_request(body: &[u8]) -> Result<RpcRequest, (Value, RpcError)> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| (Value::Null, RpcError::parse_error(e)))?;
    let Value::Object(mut object) = value else {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "the request must be a JSON object"
        };
        return Err((Value::Null, RpcError::invalid_request(what)));
    };
    let id = match object.remove("id") {
        Some(id @ (Value::String(_) | Value::Null)) => id,
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Value::Number(n),
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::invalid_request("`id` must be a string, an integer or null"),
            ));
        }
        // A2A defines no notifications: a request without an id is
        // answered like one with a null id (as the official SDKs do), so
        // that its caller learns what was wrong with it.
        None => Value::Null,
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request("`jsonrpc` must be \"2.0\"")));
    }
    let method = match object.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => {
            return Err((
                id,
                RpcError::invalid_request("`method` must be a non-empty string"),
            ));
        }
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => {
            return Err((id, RpcError::invalid_request("`params` must be an object")));
        }
    };
    Ok(RpcRequest { id, method, params })
}

/// `{"jsonrpc":"2.0","id":...,"result":...}`.
pub(crate) fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// `{"jsonrpc":"2.0","id":...,"error":{...}}`.
pub(crate) fn failure(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A request envelope, as the client sends it.
pub(crate) fn request(id: &str, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Splits a response envelope into its result or error.
pub(crate) fn into_result(mut response: Value) -> Result<Value, ResponseError> {
    if let Some(error) = response.get_mut("error").map(Value::take)
        && !error.is_null()
    {
        return Err(match serde_json::from_value::<RpcError>(error.clone()) {
            Ok(e) => ResponseError::Rpc(e),
            Err(_) => ResponseError::Malformed(format!("bad error object: {error}")),
        });
    }
    match response.get_mut("result").map(Value::take) {
        Some(result) => Ok(result),
        None => Err(ResponseError::Malformed(
            "response has neither `result` nor `error`".into(),
        )),
    }
}

/// Why a response envelope carried no result.
#[derive(Debug)]
pub(crate) enum ResponseError {
    /// The server answered with an error.
    Rpc(RpcError),
    /// The envelope itself was not valid.
    Malformed(String),
}

/// Deserializes params, naming the offending field on failure (-32602).
pub(crate) fn params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            RpcError::invalid_params(inner)
        } else {
            RpcError::invalid_params(format!("{path}: {inner}")).with_meta("field", path)
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn code(body: &str) -> i32 {
        parse_request(body.as_bytes()).unwrap_err().1.code
    }

    #[test]
    fn request_shapes_are_checked() {
        assert_eq!(code("{not json"), -32700);
        assert_eq!(code("[]"), -32600);
        assert_eq!(code("3"), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":7}"#), -32600);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":"p"}"#),
            -32600
        );
        let ok = parse_request(br#"{"jsonrpc":"2.0","id":"a","method":"GetTask"}"#).unwrap();
        assert_eq!(ok.id, json!("a"));
        assert_eq!(ok.params, json!({}));
        // No id: answered with a null one.
        let no_id = parse_request(br#"{"jsonrpc":"2.0","method":"x"}"#).unwrap();
        assert_eq!(no_id.id, Value::Null);
    }

    #[test]
    fn errors_carry_their_reason() {
        let e = RpcError::task_not_found("t1");
        assert_eq!(e.code, -32001);
        assert_eq!(e.reason(), Some("TASK_NOT_FOUND"));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["data"][0]["metadata"]["taskId"], "t1");
        assert_eq!(
            RpcError::unauthenticated().reason(),
            Some("UNAUTHENTICATED")
        );
    }

    #[test]
    fn responses_split_into_result_or_error() {
        let ok = success(&json!(1), json!({"a": 1}));
        assert_eq!(into_result(ok).unwrap(), json!({"a": 1}));
        let err = failure(&json!(1), &RpcError::task_not_found("t"));
        match into_result(err) {
            Err(ResponseError::Rpc(e)) => assert_eq!(e.code, -32001),
            other => panic!("{other:?}"),
        }
    }
}
