//! [`OpenAiFixture`]: an in-process OpenAI-compatible HTTP server that plays
//! scripted answers and records what it was sent.
//!
//! It answers every path and method (so `/v1/chat/completions` and
//! `/chat/completions` alike) with the next [`FixtureReply`] of its script:
//! JSON completions, server-sent event streams (with pauses, a missing
//! `[DONE]` or a cut connection), HTTP errors with any status, headers and
//! body, garbage. The [`openai`] module builds the JSON shapes.
//!
//! ```
//! use looopy_testkit::openai_fixture::{openai, FixtureReply, OpenAiFixture, SseReply};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let server = OpenAiFixture::start().await?;
//! server
//!     .push(FixtureReply::error(429, "slow down").with_header("retry-after", "1"))
//!     .push(FixtureReply::json(openai::completion("Hello!")))
//!     .push(SseReply::new(vec![openai::text_chunk("Hel"), openai::text_chunk("lo")]).into());
//! // Point the client at server.base_url() ("http://127.0.0.1:PORT/v1"), then:
//! assert_eq!(server.requests().len(), 0);
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures::stream;
use serde_json::Value;
use tokio::sync::oneshot;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum FixtureReply {
    /// A JSON body.
    Json {
        /// HTTP status.
        status: u16,
        /// Extra response headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: Value,
    },
    /// Any body, sent verbatim (garbage, plain-text errors, HTML from a proxy).
    Raw {
        /// HTTP status.
        status: u16,
        /// Extra response headers (set `content-type` here; the default is
        /// `application/json`).
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// A server-sent event stream (status 200).
    Sse(SseReply),
    /// A completion with this text, shaped as the request asks: JSON, or
    /// (for `"stream": true`) a text chunk, a finish chunk, a usage chunk and
    /// `[DONE]`.
    Text(String),
    /// Waits, then answers with the inner reply.
    Delay(Duration, Box<FixtureReply>),
}

impl FixtureReply {
    /// A 200 JSON answer.
    pub fn json(body: Value) -> Self {
        FixtureReply::Json {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }

    /// An error in OpenAI's shape: `{"error": {"message", "type", "code"}}`.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        FixtureReply::Json {
            status,
            headers: Vec::new(),
            body: openai::error(status, &message.into()),
        }
    }

    /// A verbatim body with this status (content type `application/json`
    /// unless a header says otherwise).
    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        FixtureReply::Raw {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A stream of these chunks, ending with `[DONE]`.
    pub fn sse(chunks: Vec<Value>) -> Self {
        FixtureReply::Sse(SseReply::new(chunks))
    }

    /// This reply after `delay`.
    pub fn after(self, delay: Duration) -> Self {
        FixtureReply::Delay(delay, Box::new(self))
    }

    /// Adds a response header (to the inner reply of a delay; ignored by
    /// [`FixtureReply::Text`]).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let pair = (name.into(), value.into());
        match &mut self {
            FixtureReply::Json { headers, .. } | FixtureReply::Raw { headers, .. } => {
                headers.push(pair)
            }
            FixtureReply::Sse(sse) => sse.headers.push(pair),
            FixtureReply::Delay(d, inner) => {
                return FixtureReply::Delay(
                    *d,
                    Box::new((**inner).clone().with_header(pair.0, pair.1)),
                );
            }
            FixtureReply::Text(_) => {}
        }
        self
    }
}

impl From<SseReply> for FixtureReply {
    fn from(sse: SseReply) -> Self {
        FixtureReply::Sse(sse)
    }
}

/// One item of a server-sent event stream.
#[derive(Debug, Clone)]
pub enum SseEvent {
    /// `data: <json>` and a blank line.
    Json(Value),
    /// `data: <text>` and a blank line (for chunks that are not valid JSON).
    Data(String),
    /// `event: <name>`, `data: <json>` and a blank line (Anthropic's form).
    Named(String, Value),
    /// This text exactly (comments, odd framing).
    Verbatim(String),
    /// These bytes exactly (a stream that is not UTF-8).
    Bytes(Vec<u8>),
    /// No output: waits this long before the next item.
    Pause(Duration),
}

/// How a stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SseEnd {
    /// `data: [DONE]`, then a clean end of the body.
    #[default]
    Done,
    /// A clean end of the body without `[DONE]`.
    Close,
    /// The connection is cut (the body ends with an error), shortly after
    /// the events were flushed.
    Abort,
}

/// A scripted server-sent event stream.
#[derive(Debug, Clone, Default)]
pub struct SseReply {
    /// The events, in order.
    pub events: Vec<SseEvent>,
    /// Wait between two events.
    pub interval: Duration,
    /// How the stream ends.
    pub end: SseEnd,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
}

impl SseReply {
    /// A stream of these JSON chunks, ending with `[DONE]`.
    pub fn new(chunks: Vec<Value>) -> Self {
        SseReply {
            events: chunks.into_iter().map(SseEvent::Json).collect(),
            ..Default::default()
        }
    }

    /// A stream of these events.
    pub fn from_events(events: Vec<SseEvent>) -> Self {
        SseReply {
            events,
            ..Default::default()
        }
    }

    /// Waits `interval` between events.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Ends the stream this way.
    pub fn end(mut self, end: SseEnd) -> Self {
        self.end = end;
        self
    }

    /// Appends an event.
    pub fn then(mut self, event: SseEvent) -> Self {
        self.events.push(event);
        self
    }
}

/// A request the fixture received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// Path (and query).
    pub path: String,
    /// Headers, names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Value::Null` when it is not JSON).
    pub body: Value,
    /// The body as text.
    pub body_text: String,
}

impl RecordedRequest {
    /// The first value of a header (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the request asked for a stream.
    pub fn is_stream(&self) -> bool {
        // Gemini says it in the method of the URL rather than the body.
        self.path.contains(":streamGenerateContent")
            || self
                .body
                .get("stream")
                .and_then(Value::as_bool)
                .unwrap_or(false)
    }
}

/// Chooses a reply from the request body (see [`OpenAiFixture::start_responder`]).
pub type Responder = Arc<dyn Fn(&Value) -> FixtureReply + Send + Sync>;

enum Mode {
    Scripted,
    Fast {
        latency: Duration,
        reply: FixtureReply,
    },
    Responder {
        latency: Duration,
        respond: Responder,
    },
}

#[derive(Default)]
struct Script {
    replies: VecDeque<FixtureReply>,
    requests: Vec<RecordedRequest>,
}

struct Shared {
    mode: Mode,
    script: Mutex<Script>,
    served: AtomicUsize,
    aborted: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An OpenAI-compatible server on `127.0.0.1` with a random port.
///
/// Two modes:
///
/// - [`start`](Self::start): answers requests in order from a script
///   ([`push`](Self::push)) and records every request. When the script is
///   exhausted it answers 500 saying so.
/// - [`start_fast`](Self::start_fast): answers every request with the same
///   reply after a fixed latency and records nothing (for benchmarks and load
///   tests).
///
/// The server stops when the fixture is dropped. It counts answers that
/// were abandoned by the client before they were complete (a dropped stream,
/// a request given up during a delay): see
/// [`wait_for_aborted`](Self::wait_for_aborted).
pub struct OpenAiFixture {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for OpenAiFixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiFixture")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl OpenAiFixture {
    /// A scripted, recording server.
    pub async fn start() -> std::io::Result<Self> {
        Self::serve(Mode::Scripted).await
    }

    /// A server that answers every request with `reply` after `latency`
    /// (use [`FixtureReply::Text`] to answer streamed and plain requests
    /// alike). Nothing is recorded.
    pub async fn start_fast(latency: Duration, reply: FixtureReply) -> std::io::Result<Self> {
        Self::serve(Mode::Fast { latency, reply }).await
    }

    /// A server that answers every request with what `respond` makes of its
    /// JSON body, after `latency`. Nothing is recorded. Benchmarks use it to
    /// play whole turns (tool calls until the history holds enough results,
    /// then an answer).
    pub async fn start_responder(latency: Duration, respond: Responder) -> std::io::Result<Self> {
        Self::serve(Mode::Responder { latency, respond }).await
    }

    async fn serve(mode: Mode) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            mode,
            script: Mutex::default(),
            served: AtomicUsize::new(0),
            aborted: AtomicUsize::new(0),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(OpenAiFixture {
            addr,
            shared,
            shutdown: Some(tx),
        })
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (no path).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, what OpenAI clients call the base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: FixtureReply) -> &Self {
        self.shared.lock().replies.push_back(reply);
        self
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        self.shared.lock().replies.len()
    }

    /// The requests received so far (scripted mode).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The last request received (scripted mode).
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.lock().requests.last().cloned()
    }

    /// Number of requests answered or being answered (both modes).
    pub fn served(&self) -> usize {
        self.shared.served.load(Ordering::SeqCst)
    }

    /// Number of answers the client abandoned before they were complete.
    pub fn aborted(&self) -> usize {
        self.shared.aborted.load(Ordering::SeqCst)
    }

    /// Waits until at least `count` answers were abandoned, for at most
    /// `within`. Returns whether that happened.
    pub async fn wait_for_aborted(&self, count: usize, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.aborted() >= count {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for OpenAiFixture {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Counts an answer as abandoned unless it is marked complete first.
struct AbortGuard {
    shared: Arc<Shared>,
    complete: bool,
}

impl AbortGuard {
    fn complete(&mut self) {
        self.complete = true;
    }
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if !self.complete {
            self.shared.aborted.fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let n = shared.served.fetch_add(1, Ordering::SeqCst);
    let reply = match &shared.mode {
        Mode::Fast { latency, reply } => {
            if latency.is_zero() {
                reply.clone()
            } else {
                reply.clone().after(*latency)
            }
        }
        Mode::Responder { latency, respond } => {
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let reply = respond(&body);
            if latency.is_zero() {
                reply
            } else {
                reply.after(*latency)
            }
        }
        Mode::Scripted => {
            let body_text = String::from_utf8_lossy(&bytes).into_owned();
            let recorded = RecordedRequest {
                method: parts.method.to_string(),
                path: parts
                    .uri
                    .path_and_query()
                    .map_or_else(|| parts.uri.path().to_owned(), |p| p.to_string()),
                headers: parts
                    .headers
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_owned(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect(),
                body: serde_json::from_str(&body_text).unwrap_or(Value::Null),
                body_text,
            };
            let mut script = shared.lock();
            script.requests.push(recorded);
            script.replies.pop_front().unwrap_or_else(|| {
                FixtureReply::error(
                    500,
                    format!(
                        "OpenAiFixture: no scripted reply left for request #{}",
                        n + 1
                    ),
                )
            })
        }
    };
    let guard = AbortGuard {
        shared: shared.clone(),
        complete: false,
    };
    render(reply, wants_stream(&bytes), guard).await
}

/// Whether a body asks for a stream, without parsing all of it.
fn wants_stream(body: &[u8]) -> bool {
    let key = b"\"stream\"";
    let Some(at) = body.windows(key.len()).position(|w| w == key) else {
        return false;
    };
    let rest = body[at + key.len()..]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace() || **b == b':')
        .take(4)
        .copied()
        .collect::<Vec<u8>>();
    rest == b"true"
}

async fn render(mut reply: FixtureReply, stream: bool, mut guard: AbortGuard) -> Response {
    loop {
        match reply {
            FixtureReply::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                reply = *inner;
            }
            FixtureReply::Text(text) if stream => {
                reply = FixtureReply::Sse(SseReply::new(vec![
                    openai::text_chunk(&text),
                    openai::finish_chunk("stop"),
                    openai::usage_chunk(10, 10),
                ]));
            }
            FixtureReply::Text(text) => reply = FixtureReply::json(openai::completion(&text)),
            FixtureReply::Json {
                status,
                headers,
                body,
            } => {
                guard.complete();
                return respond(
                    status,
                    &headers,
                    "application/json",
                    Body::from(body.to_string()),
                );
            }
            FixtureReply::Raw {
                status,
                headers,
                body,
            } => {
                guard.complete();
                return respond(status, &headers, "application/json", Body::from(body));
            }
            FixtureReply::Sse(sse) => {
                let headers = sse.headers.clone();
                return respond(200, &headers, "text/event-stream", sse_body(sse, guard));
            }
        }
    }
}

fn respond(status: u16, headers: &[(String, String)], content_type: &str, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if content_type == "text/event-stream" {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            h.insert(n, v);
        }
    }
    response
}

struct SseState {
    events: VecDeque<SseEvent>,
    interval: Duration,
    end: SseEnd,
    started: bool,
    ended: bool,
    guard: AbortGuard,
}

fn sse_body(sse: SseReply, guard: AbortGuard) -> Body {
    let state = SseState {
        events: sse.events.into(),
        interval: sse.interval,
        end: sse.end,
        started: false,
        ended: false,
        guard,
    };
    Body::from_stream(stream::unfold(state, |mut s| async move {
        loop {
            if s.ended {
                return None;
            }
            let Some(event) = s.events.pop_front() else {
                s.ended = true;
                s.guard.complete();
                return match s.end {
                    SseEnd::Done => Some((Ok(Bytes::from_static(b"data: [DONE]\n\n")), s)),
                    SseEnd::Close => None,
                    SseEnd::Abort => {
                        // Let the server flush what was sent before cutting.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Some((
                            Err(std::io::Error::other("OpenAiFixture: connection cut")),
                            s,
                        ))
                    }
                };
            };
            if s.started && !s.interval.is_zero() {
                tokio::time::sleep(s.interval).await;
            }
            let bytes = match event {
                SseEvent::Pause(d) => {
                    tokio::time::sleep(d).await;
                    continue;
                }
                SseEvent::Json(v) => format!("data: {v}\n\n").into_bytes(),
                SseEvent::Data(d) => format!("data: {d}\n\n").into_bytes(),
                SseEvent::Named(name, v) => format!("event: {name}\ndata: {v}\n\n").into_bytes(),
                SseEvent::Verbatim(t) => t.into_bytes(),
                SseEvent::Bytes(b) => b,
            };
            s.started = true;
            return Some((Ok::<Bytes, std::io::Error>(Bytes::from(bytes)), s));
        }
    }))
}

/// Builders for OpenAI chat completion JSON (answers, chunks, errors).
pub mod openai {
    use serde_json::{Value, json};

    /// A whole `chat.completion` with this text.
    pub fn completion(text: &str) -> Value {
        completion_with(json!({"role": "assistant", "content": text}), "stop")
    }

    /// A whole `chat.completion` with this assistant `message` and finish
    /// reason, and usage of 10 + 10 tokens.
    pub fn completion_with(message: Value, finish_reason: &str) -> Value {
        json!({
            "id": "chatcmpl-fixture",
            "object": "chat.completion",
            "created": 0,
            "model": "fixture-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
        })
    }

    /// A whole `chat.completion` asking for these `(id, name, arguments)` calls.
    pub fn tool_calls_completion(calls: &[(&str, &str, &str)]) -> Value {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
            })
            .collect();
        completion_with(
            json!({"role": "assistant", "content": null, "tool_calls": calls}),
            "tool_calls",
        )
    }

    /// A `chat.completion.chunk` with this delta and finish reason.
    pub fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": "chatcmpl-fixture",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fixture-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        })
    }

    /// A chunk with more text.
    pub fn text_chunk(text: &str) -> Value {
        chunk(json!({"content": text}), None)
    }

    /// A chunk with more reasoning, in the `reasoning_content` field.
    pub fn reasoning_chunk(text: &str) -> Value {
        chunk(json!({"reasoning_content": text}), None)
    }

    /// A chunk that starts tool call `index`.
    pub fn tool_call_start_chunk(index: usize, id: &str, name: &str) -> Value {
        chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            None,
        )
    }

    /// A chunk with more arguments for tool call `index`.
    pub fn tool_args_chunk(index: usize, arguments: &str) -> Value {
        chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}),
            None,
        )
    }

    /// A chunk with an empty delta and this finish reason.
    pub fn finish_chunk(reason: &str) -> Value {
        chunk(json!({}), Some(reason))
    }

    /// The final usage chunk as OpenAI sends it: `choices` empty.
    pub fn usage_chunk(prompt_tokens: u64, completion_tokens: u64) -> Value {
        json!({
            "id": "chatcmpl-fixture",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fixture-model",
            "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}
        })
    }

    /// The final usage chunk as some servers send it: one choice with an
    /// empty delta.
    pub fn usage_chunk_with_empty_delta(prompt_tokens: u64, completion_tokens: u64) -> Value {
        let mut v = usage_chunk(prompt_tokens, completion_tokens);
        v["choices"] = json!([{"index": 0, "delta": {}, "finish_reason": null}]);
        v
    }

    /// An error body: `{"error": {"message", "type", "code"}}`.
    pub fn error(status: u16, message: &str) -> Value {
        let kind = match status {
            401 | 403 => "authentication_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            400..=499 => "invalid_request_error",
            _ => "server_error",
        };
        json!({"error": {"message": message, "type": kind, "code": status}})
    }
}
