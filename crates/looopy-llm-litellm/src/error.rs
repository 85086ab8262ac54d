//! From HTTP statuses, bodies and transport failures to [`LlmError`].

use std::time::{Duration, SystemTime};

use looopy_core::LlmError;
use looopy_core::provider::{TransportFailure, parse_retry_after, quote_message, transport_error};
use reqwest::header::HeaderMap;
use serde_json::Value;

/// The error for an answer with a non-success `status`, quoting the server.
pub(crate) fn from_status(status: u16, headers: &HeaderMap, body: &str) -> LlmError {
    let message =
        server_message(body).unwrap_or_else(|| format!("HTTP {status} with an empty body"));
    match status {
        401 | 403 => LlmError::Authentication { message },
        404 => LlmError::NotFound { message },
        408 => LlmError::Timeout {
            message: format!("server answered 408: {message}"),
        },
        429 => LlmError::RateLimited {
            message,
            retry_after: retry_after(headers, SystemTime::now()),
        },
        // Anthropic's overloaded status, which a proxy passes through.
        529 => LlmError::Overloaded {
            message,
            retry_after: retry_after(headers, SystemTime::now()),
        },
        500..=599 => LlmError::Server {
            status,
            message,
            retry_after: retry_after(headers, SystemTime::now()),
        },
        400 if error_code(body) == Some("context_length_exceeded") => {
            LlmError::ContextLengthExceeded { message }
        }
        400 if error_code(body) == Some("content_filter") => LlmError::ContentFilter { message },
        400..=499 => LlmError::BadRequest {
            message: if status == 400 || status == 422 {
                message
            } else {
                format!("HTTP {status}: {message}")
            },
        },
        _ => LlmError::Other {
            message: format!("unexpected HTTP {status}: {message}"),
        },
    }
}

/// The error for an `{"error": …}` object sent inside a stream.
pub(crate) fn from_stream_error(error: &Value) -> LlmError {
    let message = message_of(error).unwrap_or_else(|| error.to_string());
    let code = error
        .get("code")
        .and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        })
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c));
    match code {
        Some(status) => from_status(status, &HeaderMap::new(), &error_body(&message)),
        None if error.get("type").and_then(Value::as_str) == Some("rate_limit_error") => {
            LlmError::RateLimited {
                message,
                retry_after: None,
            }
        }
        None => LlmError::Server {
            status: 500,
            retry_after: None,
            message: format!("error in stream: {message}"),
        },
    }
}

/// The `error.code` of an OpenAI error body (`context_length_exceeded`,
/// or `content_filter` from Azure OpenAI).
fn error_code(body: &str) -> Option<&'static str> {
    let v: Value = serde_json::from_str(body).ok()?;
    let code = v.get("error")?.get("code")?.as_str()?;
    ["context_length_exceeded", "content_filter"]
        .into_iter()
        .find(|known| *known == code)
}

fn error_body(message: &str) -> String {
    serde_json::json!({ "error": { "message": message } }).to_string()
}

/// The human-readable message of an error body: `error.message`, `error`
/// (a string), `message` or `detail`, else the body itself, trimmed.
pub(crate) fn server_message(body: &str) -> Option<String> {
    let body = body.trim();
    if body.is_empty() {
        return None;
    }
    let text = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| message_of(&v))
        .unwrap_or_else(|| body.to_owned());
    Some(quote_message(text))
}

fn message_of(v: &Value) -> Option<String> {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match v.get("error") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(e @ Value::Object(_)) => field(e, "message").or_else(|| Some(e.to_string())),
        _ => field(v, "message").or_else(|| match v.get("detail") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(d) => Some(d.to_string()),
            None => None,
        }),
    }
}

/// How long the server asks us to wait: `retry-after-ms` (OpenAI), then
/// `Retry-After` as seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    parse_retry_after(header("retry-after")?, now)
}

/// What a transport failure means. `what` says which phase failed.
pub(crate) fn from_reqwest(e: &reqwest::Error, what: &str) -> LlmError {
    let failure = if e.is_timeout() {
        TransportFailure::Timeout
    } else if e.is_connect() {
        TransportFailure::Connection
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

    #[test]
    fn statuses_map_to_kinds_with_the_servers_words() {
        let h = HeaderMap::new();
        let e = from_status(401, &h, r#"{"error":{"message":"Invalid key sk-...x"}}"#);
        assert_eq!(
            e,
            LlmError::Authentication {
                message: "Invalid key sk-...x".into()
            }
        );
        assert!(
            matches!(from_status(404, &h, "no such model"), LlmError::NotFound { message } if message == "no such model")
        );
        assert!(
            matches!(from_status(422, &h, r#"{"detail":"bad"}"#), LlmError::BadRequest { message } if message == "bad")
        );
        assert!(matches!(
            from_status(503, &h, ""),
            LlmError::Server { status: 503, .. }
        ));
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert!(matches!(
            from_status(429, &h, r#"{"error":"slow down"}"#),
            LlmError::RateLimited { message, retry_after: Some(d) } if message == "slow down" && d == Duration::from_secs(7)
        ));
    }

    #[test]
    fn context_length_and_content_filter_have_their_kinds() {
        let h = HeaderMap::new();
        let e = from_status(
            400,
            &h,
            r#"{"error":{"message":"maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        );
        assert!(
            matches!(e, LlmError::ContextLengthExceeded { message } if message.contains("8192"))
        );
        let e = from_status(
            400,
            &h,
            r#"{"error":{"message":"filtered","code":"content_filter"}}"#,
        );
        assert!(matches!(e, LlmError::ContentFilter { .. }));
        let e = from_status(400, &h, r#"{"error":{"message":"bad","code":"other"}}"#);
        assert!(matches!(e, LlmError::BadRequest { .. }));
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_ms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // 1994-11-06 08:49:37 UTC
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        let mut h = HeaderMap::new();
        h.insert("retry-after-ms", HeaderValue::from_static("1500"));
        h.insert("retry-after", HeaderValue::from_static("9"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn stream_errors_use_their_code() {
        let e = from_stream_error(&serde_json::json!({"message": "quota", "code": "429"}));
        assert!(matches!(e, LlmError::RateLimited { message, .. } if message == "quota"));
        let e = from_stream_error(&serde_json::json!({"message": "boom"}));
        assert!(matches!(e, LlmError::Server { message, .. } if message.contains("boom")));
    }
}
