//! How an [`RpcError`] is answered on each binding. The error carries its
//! JSON-RPC code; [`Class`] gives, from that one code, the HTTP status and
//! the `google.rpc.Code` of spec §5.4 (one table for every binding):
//!
//! - JSON-RPC: the envelope with the code, HTTP 200 (401 and 413 keep their
//!   status: they are answered before a request is read);
//! - HTTP+JSON: [`IntoResponse`], the AIP-193 body `{"error": {code,
//!   status, message, details}}` with the HTTP status (spec §11.6);
//! - gRPC: `From<RpcError> for tonic::Status`, the `ErrorInfo` in the
//!   status details.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::RpcError;
use crate::jsonrpc::{self, PAYLOAD_TOO_LARGE, UNAUTHENTICATED};

/// The `google.rpc.Code` values the server answers with (their numbers are
/// the gRPC status codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RpcCode {
    InvalidArgument = 3,
    NotFound = 5,
    FailedPrecondition = 9,
    ResourceExhausted = 8,
    Unimplemented = 12,
    Internal = 13,
    Unauthenticated = 16,
}

impl RpcCode {
    /// The code's name, as AIP-193 bodies spell it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RpcCode::InvalidArgument => "INVALID_ARGUMENT",
            RpcCode::NotFound => "NOT_FOUND",
            RpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            RpcCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            RpcCode::Unimplemented => "UNIMPLEMENTED",
            RpcCode::Internal => "INTERNAL",
            RpcCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

/// What an error is on the HTTP+JSON and gRPC bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Class {
    /// The HTTP status (HTTP+JSON; JSON-RPC for 401 and 413).
    pub(crate) http: StatusCode,
    /// The `google.rpc.Code` named in HTTP+JSON bodies.
    pub(crate) rest: RpcCode,
    /// The gRPC status code.
    pub(crate) grpc: RpcCode,
}

impl Class {
    const fn of(http: StatusCode, rest: RpcCode, grpc: RpcCode) -> Self {
        Class { http, rest, grpc }
    }
}

impl RpcError {
    /// The error's [`Class`] (spec §5.4; where it is silent: bad input
    /// `INVALID_ARGUMENT`, an unknown method or path 404 / `UNIMPLEMENTED`,
    /// missing credentials 401 / `UNAUTHENTICATED`, an oversized body 413 /
    /// `RESOURCE_EXHAUSTED`, the rest 500 / `INTERNAL`).
    pub(crate) fn class(&self) -> Class {
        use RpcCode::*;
        use a2a::error_code as c;
        match self.code {
            c::TASK_NOT_FOUND => Class::of(StatusCode::NOT_FOUND, NotFound, NotFound),
            c::TASK_NOT_CANCELABLE => {
                Class::of(StatusCode::CONFLICT, FailedPrecondition, FailedPrecondition)
            }
            c::PUSH_NOTIFICATION_NOT_SUPPORTED
            | c::UNSUPPORTED_OPERATION
            | c::VERSION_NOT_SUPPORTED => {
                Class::of(StatusCode::BAD_REQUEST, Unimplemented, Unimplemented)
            }
            c::CONTENT_TYPE_NOT_SUPPORTED => Class::of(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                InvalidArgument,
                InvalidArgument,
            ),
            c::INVALID_AGENT_RESPONSE => Class::of(StatusCode::BAD_GATEWAY, Internal, Internal),
            c::EXTENDED_CARD_NOT_CONFIGURED | c::EXTENSION_SUPPORT_REQUIRED => Class::of(
                StatusCode::BAD_REQUEST,
                FailedPrecondition,
                FailedPrecondition,
            ),
            c::METHOD_NOT_FOUND => Class::of(StatusCode::NOT_FOUND, NotFound, Unimplemented),
            c::INVALID_REQUEST if self.reason() == Some(PAYLOAD_TOO_LARGE) => Class::of(
                StatusCode::PAYLOAD_TOO_LARGE,
                ResourceExhausted,
                ResourceExhausted,
            ),
            c::PARSE_ERROR | c::INVALID_REQUEST | c::INVALID_PARAMS => {
                Class::of(StatusCode::BAD_REQUEST, InvalidArgument, InvalidArgument)
            }
            UNAUTHENTICATED => {
                Class::of(StatusCode::UNAUTHORIZED, Unauthenticated, Unauthenticated)
            }
            _ => Class::of(StatusCode::INTERNAL_SERVER_ERROR, Internal, Internal),
        }
    }

    /// The AIP-193 body of the error: `{"error": {code, status, message,
    /// details}}`, the details holding the `google.rpc.ErrorInfo`.
    pub(crate) fn rest_body(&self) -> Value {
        let class = self.class();
        json!({"error": {
            "code": class.http.as_u16(),
            "status": class.rest.name(),
            "message": self.message,
            "details": self.data.clone().unwrap_or_else(|| json!([])),
        }})
    }
}

/// `WWW-Authenticate` on the answers to requests without valid credentials.
fn challenge(status: StatusCode, response: &mut Response) {
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"a2a\""),
        );
    }
}

/// The HTTP+JSON form.
impl IntoResponse for RpcError {
    fn into_response(self) -> Response {
        let status = self.class().http;
        let mut response = (status, Json(self.rest_body())).into_response();
        challenge(status, &mut response);
        response
    }
}

/// The JSON-RPC form of a failed request with this `id`.
pub(crate) fn rpc_failure(id: &Value, e: &RpcError) -> Response {
    let status = match e.class().http {
        s @ (StatusCode::UNAUTHORIZED | StatusCode::PAYLOAD_TOO_LARGE) => s,
        _ => StatusCode::OK,
    };
    let mut response = (status, Json(jsonrpc::failure(id, e))).into_response();
    challenge(status, &mut response);
    response
}

#[cfg(feature = "grpc")]
mod grpc {
    use std::collections::HashMap;

    use prost::Message as _;
    use serde_json::Value;

    use crate::RpcError;

    /// `google.rpc.ErrorInfo`.
    #[derive(Clone, PartialEq, prost::Message)]
    struct ErrorInfo {
        #[prost(string, tag = "1")]
        reason: String,
        #[prost(string, tag = "2")]
        domain: String,
        #[prost(map = "string, string", tag = "3")]
        metadata: HashMap<String, String>,
    }

    /// `google.rpc.Status`, the payload of `grpc-status-details-bin`.
    #[derive(Clone, PartialEq, prost::Message)]
    struct RpcStatus {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
        #[prost(message, repeated, tag = "3")]
        details: Vec<prost_types::Any>,
    }

    /// The gRPC form: the status of the error's class, its `ErrorInfo` in
    /// the details.
    impl From<RpcError> for tonic::Status {
        fn from(e: RpcError) -> Self {
            let code = tonic::Code::from_i32(e.class().grpc as i32);
            let details = e
                .data
                .as_ref()
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|d| {
                    let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                    let metadata = d
                        .get("metadata")
                        .and_then(Value::as_object)
                        .map(|m| {
                            m.iter()
                                .map(|(k, v)| {
                                    (k.clone(), v.as_str().unwrap_or_default().to_owned())
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    let info = ErrorInfo {
                        reason: text("reason"),
                        domain: text("domain"),
                        metadata,
                    };
                    prost_types::Any {
                        type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
                        value: info.encode_to_vec(),
                    }
                })
                .collect();
            let body = RpcStatus {
                code: code as i32,
                message: e.message.clone(),
                details,
            };
            tonic::Status::with_details(code, e.message, body.encode_to_vec().into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_the_aip193_shape() {
        let body = RpcError::task_not_found("t1").rest_body();
        assert_eq!(body["error"]["code"], 404);
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(
            RpcError::content_type_not_supported("a/b").class().http,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert_eq!(
            RpcError::task_not_cancelable("t", "completed").class().http,
            StatusCode::CONFLICT
        );
    }

    #[test]
    fn each_error_has_one_class_for_every_binding() {
        let too_large = RpcError::payload_too_large(10);
        assert_eq!(too_large.code, -32600);
        assert_eq!(too_large.class().http, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            RpcError::invalid_request("x").class().http,
            StatusCode::BAD_REQUEST
        );
        let unknown = RpcError::method_not_found("Nope").class();
        assert_eq!(
            (unknown.http, unknown.rest, unknown.grpc),
            (
                StatusCode::NOT_FOUND,
                RpcCode::NotFound,
                RpcCode::Unimplemented
            )
        );
        let auth = RpcError::unauthenticated().class();
        assert_eq!(auth.http, StatusCode::UNAUTHORIZED);
        assert_eq!(auth.grpc as i32, 16);
        // JSON-RPC answers 200 except before the request is read.
        assert_eq!(
            rpc_failure(&Value::Null, &RpcError::task_not_found("t")).status(),
            StatusCode::OK
        );
        let refused = rpc_failure(&Value::Null, &RpcError::unauthenticated());
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        assert!(refused.headers().contains_key(header::WWW_AUTHENTICATE));
        assert_eq!(
            rpc_failure(&Value::Null, &too_large).status(),
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }
}
