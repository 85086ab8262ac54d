//! From Gemini's HTTP statuses and error bodies to [`LlmError`].
//!
//! Gemini answers with `{"error": {code, message, status, details}}`. A 429
//! says how long to wait in a `google.rpc.RetryInfo` detail
//! (`"retryDelay": "37s"`); an invalid key is a 400 whose `ErrorInfo`
//! detail has the reason `API_KEY_INVALID`.

use std::time::{Duration, SystemTime};

use looopy_core::LlmError;
use looopy_core::provider::{TransportFailure, parse_retry_after, quote_message, transport_error};
use serde_json::Value;

/// The error for an answer with a non-success `status`.
pub(crate) fn from_status(status: u16, retry_after_header: Option<&str>, body: &str) -> LlmError {
    let json: Option<Value> = serde_json::from_str(body.trim()).ok();
    let error = json.as_ref().and_then(|v| v.get("error"));
    from_error(status, error, body, retry_after_header)
}

/// The error of an `{"error": …}` object, inside a stream or as the body of
/// an error answer.
pub(crate) fn from_error(
    status: u16,
    error: Option<&Value>,
    body: &str,
    retry_after_header: Option<&str>,
) -> LlmError {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut message = error
        .and_then(|e| text(e, "message"))
        .unwrap_or_else(|| body.trim().to_owned());
    if message.is_empty() {
        message = format!("HTTP {status} with an empty body");
    }
    let message = quote_message(message);
    let grpc_status = error.and_then(|e| text(e, "status")).unwrap_or_default();
    let details = error
        .and_then(|e| e.get("details"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let reason = details
        .iter()
        .find_map(|d| d.get("reason").and_then(Value::as_str))
        .unwrap_or_default();
    let retry_after = details
        .iter()
        .find_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .and_then(parse_delay)
        .or_else(|| retry_after_header.and_then(|v| parse_retry_after(v, SystemTime::now())));
    match (status, grpc_status.as_str()) {
        (400, _) if reason == "API_KEY_INVALID" => LlmError::Authentication { message },
        (400, _) if message.contains("exceeds the maximum number of tokens") => {
            LlmError::ContextLengthExceeded { message }
        }
        (401 | 403, _) | (_, "UNAUTHENTICATED" | "PERMISSION_DENIED") => {
            LlmError::Authentication { message }
        }
        (404, _) | (_, "NOT_FOUND") => LlmError::NotFound { message },
        (429, _) | (_, "RESOURCE_EXHAUSTED") => LlmError::RateLimited {
            message,
            retry_after,
        },
        (503, _) | (_, "UNAVAILABLE") => LlmError::Overloaded {
            message,
            retry_after,
        },
        (408, _) | (504, _) | (_, "DEADLINE_EXCEEDED") => LlmError::Timeout {
            message: format!("the server gave up ({status}): {message}"),
        },
        (500..=599, _) => LlmError::Server {
            status,
            message,
            retry_after,
        },
        (400..=499, _) => LlmError::BadRequest {
            message: if grpc_status.is_empty() {
                message
            } else {
                format!("{grpc_status}: {message}")
            },
        },
        _ => LlmError::Other {
            message: format!("unexpected HTTP {status}: {message}"),
        },
    }
}

/// `"37s"`, `"1.5s"` (a protobuf `Duration` in JSON) or plain seconds.
fn parse_delay(value: &str) -> Option<Duration> {
    let value = value.trim();
    let secs = value.strip_suffix('s').unwrap_or(value);
    Duration::try_from_secs_f64(secs.parse().ok()?).ok()
}

/// What a transport failure means. `what` says which phase failed.
pub(crate) fn from_reqwest(e: &reqwest::Error, what: &str) -> LlmError {
    let failure = if e.is_timeout() {
        TransportFailure::Timeout
    } else if e.is_body() || e.is_decode() {
        TransportFailure::Body
    } else if e.is_builder() {
        TransportFailure::Builder
    } else {
        TransportFailure::Connection
    };
    transport_error(what, e, failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_errors_map_to_kinds() {
        let quota = r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED",
            "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}"#;
        assert_eq!(
            from_status(429, None, quota),
            LlmError::RateLimited {
                message: "Quota exceeded".into(),
                retry_after: Some(Duration::from_secs(37))
            }
        );
        let bad_key = r#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}"#;
        assert!(matches!(
            from_status(400, None, bad_key),
            LlmError::Authentication { .. }
        ));
        assert!(matches!(
            from_status(403, None, r#"{"error":{"message":"denied","status":"PERMISSION_DENIED"}}"#),
            LlmError::Authentication { message } if message == "denied"
        ));
        let invalid =
            r#"{"error":{"code":400,"message":"bad schema","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(
            from_status(400, None, invalid),
            LlmError::BadRequest {
                message: "INVALID_ARGUMENT: bad schema".into()
            }
        );
        assert!(matches!(
            from_status(503, Some("2"), r#"{"error":{"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#),
            LlmError::Overloaded { retry_after: Some(d), .. } if d == Duration::from_secs(2)
        ));
        assert!(
            matches!(from_status(404, None, "nope"), LlmError::NotFound { message } if message == "nope")
        );
        assert!(
            matches!(from_status(500, None, ""), LlmError::Server { message, .. } if message.contains("empty body"))
        );
        assert_eq!(parse_delay("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_delay("soon"), None);
    }
}
