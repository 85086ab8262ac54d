//! What every HTTP model provider shares, written without an HTTP crate:
//! the API key that is never printed, the quoting of a server's message,
//! the `Retry-After` value, the error of a failed transport, the start of
//! a body for error messages, the deadline of a call, the parser of
//! their server-sent event streams ([`SseParser`]) and the decoding of one
//! event's JSON ([`decode_event`]).
//!
//! The provider crates (`looopy-llm-litellm`, `looopy-llm-anthropic`,
//! `looopy-llm-gemini`) each speak their vendor's API through `reqwest`;
//! what they do alike lives here, once, so that they depend on
//! `looopy-core` only and never on each other.

mod sse;

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use crate::llm::LlmError;

pub use sse::SseParser;

/// An API key. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for the request's header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        ApiKey(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        ApiKey(key.to_owned())
    }
}

/// A variable's value through `lookup` (the process environment, or a
/// test's map), `None` when it is unset or blank.
pub fn env_value(lookup: impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name).filter(|v| !v.trim().is_empty())
}

/// The longest server message an error quotes, in bytes.
pub const MAX_SERVER_MESSAGE: usize = 2000;

/// A server's message as an error quotes it: cut to
/// [`MAX_SERVER_MESSAGE`] bytes (at a character boundary), with `…` when
/// it was cut.
pub fn quote_message(mut text: String) -> String {
    if text.len() > MAX_SERVER_MESSAGE {
        let mut cut = MAX_SERVER_MESSAGE;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// The longest start of a body [`snippet`] shows, in bytes.
const MAX_SNIPPET: usize = 500;

/// The start of a body, for the message of a malformed answer: its first
/// 500 bytes as text, with `…` when there is more.
pub fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_SNIPPET)]);
    if bytes.len() > MAX_SNIPPET {
        format!("{text}…")
    } else {
        text.into_owned()
    }
}

/// One streamed event's data, decoded from its JSON as `T`. Data that is
/// not UTF-8, or not `T`'s JSON, is [`LlmError::MalformedResponse`] quoting
/// its start. The text is checked once here: parsing the bytes would check
/// every string of the event on its own.
pub fn decode_event<T: serde::de::DeserializeOwned>(data: &[u8]) -> Result<T, LlmError> {
    let text = std::str::from_utf8(data).map_err(|e| LlmError::MalformedResponse {
        message: format!("invalid event (not UTF-8: {e}): {}", snippet(data)),
    })?;
    serde_json::from_str(text).map_err(|e| LlmError::MalformedResponse {
        message: format!("invalid event JSON ({e}): {}", snippet(data)),
    })
}

/// A `Retry-After` value: delay seconds (fractions too), or an HTTP date
/// (a date in the past means now). `None` for anything else.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let when = SystemTime::from(date);
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// What went wrong under the HTTP exchange, as the HTTP client tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// The client's own time limit passed.
    Timeout,
    /// The body could not be read or decoded.
    Body,
    /// The request could not be built (a bad URL or header).
    Builder,
    /// Connecting failed, or the connection broke.
    Connection,
}

/// The error of a transport failure during `what` ("sending the request",
/// "reading the response"), its message the error and all its sources
/// (HTTP clients' own messages are terse).
pub fn transport_error(
    what: &str,
    error: &(dyn std::error::Error + 'static),
    failure: TransportFailure,
) -> LlmError {
    let mut detail = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    let message = format!("{what}: {detail}");
    match failure {
        TransportFailure::Timeout => LlmError::Timeout { message },
        TransportFailure::Body => LlmError::MalformedResponse { message },
        TransportFailure::Builder => LlmError::NotConfigured { message },
        TransportFailure::Connection => LlmError::Connection { message },
    }
}

/// `limit` after `now`; a limit too long to add is about thirty years
/// away (as a timer takes it).
pub fn deadline_after(now: Instant, limit: Duration) -> Instant {
    now.checked_add(limit)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_decoded_or_a_malformed_response_quoting_it() {
        let value: serde_json::Value = decode_event(br#"{"type":"ping"}"#).unwrap();
        assert_eq!(value["type"], "ping");
        let Err(LlmError::MalformedResponse { message }) =
            decode_event::<serde_json::Value>(b"{\"a\":\xff}")
        else {
            panic!("not UTF-8 is malformed");
        };
        assert!(message.starts_with("invalid event (not UTF-8"), "{message}");
        let Err(LlmError::MalformedResponse { message }) =
            decode_event::<serde_json::Value>(b"{\"a\": nope}")
        else {
            panic!("bad JSON is malformed");
        };
        assert!(message.starts_with("invalid event JSON"), "{message}");
        assert!(message.ends_with(r#"{"a": nope}"#), "{message}");
    }

    #[test]
    fn the_key_is_never_printed() {
        let key = ApiKey::from("sk-secret");
        assert_eq!(format!("{key:?} {key}"), "ApiKey(<redacted>) <redacted>");
        assert_eq!(key.expose(), "sk-secret");
    }

    #[test]
    fn blank_variables_are_unset() {
        let lookup = |name: &str| match name {
            "SET" => Some("v".to_owned()),
            "BLANK" => Some("  ".to_owned()),
            _ => None,
        };
        assert_eq!(env_value(lookup, "SET").as_deref(), Some("v"));
        assert_eq!(env_value(lookup, "BLANK"), None);
        assert_eq!(env_value(lookup, "UNSET"), None);
    }

    #[test]
    fn long_messages_are_cut_at_a_character() {
        let long = "é".repeat(MAX_SERVER_MESSAGE);
        let quoted = quote_message(long);
        assert!(quoted.ends_with('…'));
        assert!(quoted.len() <= MAX_SERVER_MESSAGE + '…'.len_utf8());
        assert_eq!(quote_message("short".into()), "short");
        assert_eq!(snippet(b"{}"), "{}");
        assert_eq!(snippet(&[b'a'; 600]).chars().count(), 501);
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        // 2001-09-09T01:46:40Z is `now`; ten seconds later.
        assert_eq!(
            parse_retry_after("Sun, 09 Sep 2001 01:46:50 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 09 Sep 2001 01:46:30 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn transport_errors_name_the_phase_and_the_causes() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("error sending request")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(std::io::Error::other("connection refused"));
        let got = transport_error("sending the request", &e, TransportFailure::Connection);
        assert_eq!(
            got,
            LlmError::Connection {
                message: "sending the request: error sending request: connection refused".into()
            }
        );
        assert_eq!(
            transport_error("x", &e, TransportFailure::Timeout).kind(),
            "timeout"
        );
        assert_eq!(
            transport_error("x", &e, TransportFailure::Body).kind(),
            "malformed_response"
        );
        assert_eq!(
            transport_error("x", &e, TransportFailure::Builder).kind(),
            "not_configured"
        );
    }

    #[test]
    fn deadlines_saturate() {
        let now = Instant::now();
        assert_eq!(
            deadline_after(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(deadline_after(now, Duration::MAX) > now + Duration::from_secs(86_400 * 365));
    }
}
