//! From HTTP statuses, error bodies and stream `error` events to
//! [`LlmError`].
//!
//! The Messages API answers errors as
//! `{"type": "error", "error": {"type": "...", "message": "..."}}`; the
//! error type decides the kind where the status does not.

use std::time::{Duration, SystemTime};

use looopy_core::LlmError;
use looopy_core::provider::{TransportFailure, parse_retry_after, quote_message, transport_error};
use reqwest::header::HeaderMap;
use serde_json::Value;

/// The error for an answer with a non-success `status`, quoting the server.
pub(crate) fn from_status(status: u16, headers: &HeaderMap, body: &str) -> LlmError {
    let (kind, message) = parse_body(body);
    let message = message.unwrap_or_else(|| format!("HTTP {status} with an empty body"));
    classify(Some(status), kind.as_deref(), message, retry_after(headers))
}

/// The error of an `error` event inside a stream (`{"type": "error",
/// "error": {...}}`), which comes with no status.
pub(crate) fn from_stream_error(data: &Value) -> LlmError {
    let error = data.get("error").unwrap_or(data);
    let kind = error.get("type").and_then(Value::as_str);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    classify(None, kind, quote_message(message), None)
}

fn classify(
    status: Option<u16>,
    kind: Option<&str>,
    message: String,
    retry_after: Option<Duration>,
) -> LlmError {
    match (status, kind) {
        (Some(401 | 403), _) | (_, Some("authentication_error" | "permission_error")) => {
            LlmError::Authentication { message }
        }
        (Some(429), _) | (_, Some("rate_limit_error")) => LlmError::RateLimited {
            message,
            retry_after,
        },
        (Some(529), _) | (_, Some("overloaded_error")) => LlmError::Overloaded {
            message,
            retry_after,
        },
        (Some(404), _) | (_, Some("not_found_error")) => LlmError::NotFound { message },
        (Some(400) | None, Some("invalid_request_error")) | (Some(400), None)
            if is_context_length(&message) =>
        {
            LlmError::ContextLengthExceeded { message }
        }
        (Some(413), _) | (_, Some("request_too_large")) => LlmError::BadRequest {
            message: format!("request too large: {message}"),
        },
        (Some(408), _) | (_, Some("timeout_error")) => LlmError::Timeout {
            message: format!("the server gave up: {message}"),
        },
        (Some(status @ 500..=599), _) => LlmError::Server {
            status,
            message,
            retry_after,
        },
        (None, Some("api_error")) | (None, None) => LlmError::Server {
            status: 500,
            message: format!("error in stream: {message}"),
            retry_after: None,
        },
        (Some(400..=499), _) | (None, Some("invalid_request_error")) => {
            LlmError::BadRequest { message }
        }
        (Some(status), _) => LlmError::Other {
            message: format!("unexpected HTTP {status}: {message}"),
        },
        (None, Some(other)) => LlmError::Other {
            message: format!("{other}: {message}"),
        },
    }
}

/// Whether a 400's message says the prompt is over the context window
/// (`prompt is too long: 210000 tokens > 200000 maximum`).
fn is_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("prompt is too long") || m.contains("context window") || m.contains("context length")
}

/// The error type and message of an error body; the body itself, trimmed,
/// when it is not the API's JSON.
fn parse_body(body: &str) -> (Option<String>, Option<String>) {
    let body = body.trim();
    if body.is_empty() {
        return (None, None);
    }
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return (None, Some(quote_message(body.to_owned())));
    };
    let error = v.get("error").unwrap_or(&v);
    let kind = error.get("type").and_then(Value::as_str).map(str::to_owned);
    let message = match error {
        Value::String(s) => s.clone(),
        _ => error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| body.to_owned(), str::to_owned),
    };
    (kind, Some(quote_message(message)))
}

/// The `retry-after` header: seconds, or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("retry-after")?.to_str().ok()?;
    parse_retry_after(value, SystemTime::now())
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
    use reqwest::header::HeaderValue;

    fn body(kind: &str, message: &str) -> String {
        serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
            .to_string()
    }

    #[test]
    fn statuses_and_error_types_map_to_kinds() {
        let h = HeaderMap::new();
        assert_eq!(
            from_status(401, &h, &body("authentication_error", "invalid x-api-key")),
            LlmError::Authentication {
                message: "invalid x-api-key".into()
            }
        );
        assert!(matches!(
            from_status(529, &h, &body("overloaded_error", "Overloaded")),
            LlmError::Overloaded { message, .. } if message == "Overloaded"
        ));
        assert!(matches!(
            from_status(
                400,
                &h,
                &body(
                    "invalid_request_error",
                    "prompt is too long: 210000 tokens > 200000 maximum"
                )
            ),
            LlmError::ContextLengthExceeded { .. }
        ));
        assert!(matches!(
            from_status(400, &h, &body("invalid_request_error", "messages: empty")),
            LlmError::BadRequest { message } if message == "messages: empty"
        ));
        assert!(matches!(
            from_status(500, &h, &body("api_error", "boom")),
            LlmError::Server { status: 500, .. }
        ));
        assert!(matches!(
            from_status(502, &h, "<html>bad gateway</html>"),
            LlmError::Server { status: 502, message, .. } if message.contains("bad gateway")
        ));
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert!(matches!(
            from_status(429, &h, &body("rate_limit_error", "slow down")),
            LlmError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(7)
        ));
    }

    #[test]
    fn stream_errors_use_their_type() {
        let e = from_stream_error(
            &serde_json::json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
        assert!(matches!(e, LlmError::Overloaded { .. }), "{e:?}");
        let e = from_stream_error(
            &serde_json::json!({"type": "error", "error": {"type": "api_error", "message": "x"}}),
        );
        assert!(matches!(e, LlmError::Server { .. }), "{e:?}");
    }
}
