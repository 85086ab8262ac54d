//! [`A2aClient`]: card discovery, send, stream, get, cancel, resubscribe and
//! list, over A2A 1.0 or 0.3.

mod builder;
mod card;
mod error;
mod sse;

use std::sync::{Arc, Mutex, PoisonError};

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};

pub use builder::{A2aClientBuilder, Credentials};
pub use card::AgentCard;
pub use error::{A2aClientError, TransportError};
pub use sse::{A2aStream, StreamItem};

use crate::jsonrpc;
use crate::model::{SendRequest, SendResponse, TaskSnapshot};
use crate::server::API_KEY_HEADER;
use crate::trace;
use crate::version::{ProtocolVersion, VERSION_HEADER};
use crate::wire;
use error::rpc_error;

/// One page of [`A2aClient::list_tasks`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// The tasks, most recently updated first.
    pub tasks: Vec<TaskSnapshot>,
    /// The token of the next page; `None` on the last one.
    pub next_page_token: Option<String>,
}

/// A response: JSON, or anything else (an event stream).
enum Answer {
    Json(Value),
    Stream(reqwest::Response),
}

#[derive(Debug)]
struct Negotiation {
    version: ProtocolVersion,
    rpc_url: String,
    /// Whether a call may switch to 0.3 when the server refuses 1.0.
    may_fall_back: bool,
}

/// A client of one A2A agent.
///
/// By default it speaks 1.0; [`discover`](A2aClient::discover) switches to
/// what the card offers (the newest version both speak, and its URL), and a
/// first call refused as an unknown method or version (-32601, -32009) is
/// retried once in 0.3. [`A2aClientBuilder::version`] fixes a version and
/// turns the fallback off (spec §3.6.3: clients that need the newest
/// features should not fall back silently).
///
/// With the `otel` feature every request carries the current span's W3C
/// trace context (`traceparent`). Clones share the connection pool.
#[derive(Debug, Clone)]
pub struct A2aClient {
    http: reqwest::Client,
    base_url: String,
    credentials: Option<Credentials>,
    headers: HeaderMap,
    negotiation: Arc<Mutex<Negotiation>>,
}

fn transport(e: reqwest::Error) -> A2aClientError {
    A2aClientError::Transport(TransportError::new(e))
}

/// The items of an SSE response; the error of a JSON one.
fn stream_of(version: ProtocolVersion, answer: Answer) -> Result<A2aStream, A2aClientError> {
    match answer {
        Answer::Stream(response) => Ok(sse::events(version, response)),
        Answer::Json(value) => Err(match jsonrpc::into_result(value) {
            Err(e) => rpc_error(e),
            Ok(_) => A2aClientError::Decode("expected an event stream".into()),
        }),
    }
}

impl A2aClient {
    /// A client of the agent at `base_url` (where `/.well-known/agent-card.json` is).
    pub fn new(base_url: impl Into<String>) -> Self {
        Self::builder(base_url).build()
    }

    /// Starts building a client.
    pub fn builder(base_url: impl Into<String>) -> A2aClientBuilder {
        A2aClientBuilder::new(base_url.into())
    }

    /// The same client with other credentials (for instance the caller's,
    /// forwarded); the version negotiation stays shared.
    pub fn with_credentials(&self, credentials: Option<Credentials>) -> Self {
        A2aClient {
            credentials,
            ..self.clone()
        }
    }

    fn negotiation(&self) -> std::sync::MutexGuard<'_, Negotiation> {
        self.negotiation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The version the next call speaks.
    pub fn version(&self) -> ProtocolVersion {
        self.negotiation().version
    }

    fn headers(&self, version: ProtocolVersion) -> HeaderMap {
        let mut h = self.headers.clone();
        h.insert(VERSION_HEADER, HeaderValue::from_static(version.as_str()));
        match &self.credentials {
            Some(Credentials::Bearer(t)) => {
                if let Ok(v) = HeaderValue::from_str(&format!("Bearer {t}")) {
                    h.insert(AUTHORIZATION, v);
                }
            }
            Some(Credentials::ApiKey(k)) => {
                if let Ok(v) = HeaderValue::from_str(k) {
                    h.insert(API_KEY_HEADER, v);
                }
            }
            None => {}
        }
        trace::inject_current(&mut h);
        h
    }

    /// Fetches the agent card and adopts its newest version (unless the
    /// version was fixed) and that version's endpoint.
    pub async fn discover(&self) -> Result<AgentCard, A2aClientError> {
        let preferred = self.version();
        let response = self
            .http
            .get(format!("{}/.well-known/agent-card.json", self.base_url))
            .headers(self.headers(preferred))
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        let body = response.text().await.map_err(transport)?;
        if !status.is_success() {
            return Err(A2aClientError::Http {
                status: status.as_u16(),
                body,
            });
        }
        let raw: Value =
            serde_json::from_str(&body).map_err(|e| A2aClientError::Decode(e.to_string()))?;
        let card = AgentCard::from_json(raw).map_err(A2aClientError::Decode)?;
        let mut n = self.negotiation();
        let version = if n.may_fall_back {
            card.best_version().unwrap_or(n.version)
        } else {
            n.version
        };
        if let Some(url) = card.url_for(version) {
            n.rpc_url = url.to_owned();
        }
        n.version = version;
        n.may_fall_back = false;
        Ok(card)
    }

    /// Posts one request; on a version refusal, retries once in 0.3 when allowed.
    async fn post(
        &self,
        methods: (&str, &str),
        params: impl Fn(ProtocolVersion) -> Value,
        stream: bool,
        last_event_id: Option<&str>,
    ) -> Result<(ProtocolVersion, Answer), A2aClientError> {
        loop {
            let (version, url, may_fall_back) = {
                let n = self.negotiation();
                (n.version, n.rpc_url.clone(), n.may_fall_back)
            };
            let method = match version {
                ProtocolVersion::V1_0 => methods.0,
                ProtocolVersion::V0_3 => methods.1,
            };
            let body = jsonrpc::request(&uuid::Uuid::new_v4().to_string(), method, params(version));
            let mut headers = self.headers(version);
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            if stream {
                headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            }
            if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
                headers.insert("last-event-id", id);
            }
            let response = self
                .http
                .post(&url)
                .headers(headers)
                .body(body.to_string())
                .send()
                .await
                .map_err(transport)?;
            if !response.status().is_success() {
                let status = response.status().as_u16();
                let body = response.text().await.unwrap_or_default();
                return Err(A2aClientError::Http { status, body });
            }
            let is_json = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("json"));
            if !is_json {
                self.negotiation().may_fall_back = false;
                return Ok((version, Answer::Stream(response)));
            }
            let bytes = response.bytes().await.map_err(transport)?;
            let value: Value = serde_json::from_slice(&bytes)
                .map_err(|e| A2aClientError::Decode(e.to_string()))?;
            let refused = value
                .pointer("/error/code")
                .and_then(Value::as_i64)
                .is_some_and(|c| c == -32601 || c == -32009);
            let mut n = self.negotiation();
            n.may_fall_back = false;
            if may_fall_back && refused && version == ProtocolVersion::V1_0 {
                // The server does not speak 1.0: try 0.3.
                n.version = ProtocolVersion::V0_3;
                continue;
            }
            return Ok((version, Answer::Json(value)));
        }
    }

    async fn call(
        &self,
        methods: (&str, &str),
        params: impl Fn(ProtocolVersion) -> Value,
    ) -> Result<(ProtocolVersion, Value), A2aClientError> {
        match self.post(methods, params, false, None).await? {
            (version, Answer::Json(value)) => {
                Ok((version, jsonrpc::into_result(value).map_err(rpc_error)?))
            }
            (_, Answer::Stream(_)) => {
                Err(A2aClientError::Decode("expected a JSON response".into()))
            }
        }
    }

    /// Sends a message (`SendMessage` / `message/send`). A blocking request
    /// returns once the turn ended or waits for input.
    pub async fn send(&self, request: &SendRequest) -> Result<SendResponse, A2aClientError> {
        let (version, result) = self
            .call(("SendMessage", "message/send"), |v| {
                wire::encode_send_params(v, request)
            })
            .await?;
        wire::decode_send_response(version, result).map_err(A2aClientError::Decode)
    }

    /// Sends a message and streams the turn (`SendStreamingMessage` /
    /// `message/stream`).
    pub async fn stream(&self, request: &SendRequest) -> Result<A2aStream, A2aClientError> {
        let (version, response) = self
            .post(
                ("SendStreamingMessage", "message/stream"),
                |v| wire::encode_send_params(v, request),
                true,
                None,
            )
            .await?;
        stream_of(version, response)
    }

    /// Streams a task again (`SubscribeToTask` / `tasks/resubscribe`): with
    /// `last_event_id`, only what came after that event (also for a task that
    /// already ended); without, the current turn from its start (1.0 streams
    /// begin with the task as it is).
    pub async fn resubscribe(
        &self,
        task_id: &str,
        last_event_id: Option<&str>,
    ) -> Result<A2aStream, A2aClientError> {
        let (version, response) = self
            .post(
                ("SubscribeToTask", "tasks/resubscribe"),
                |_| json!({ "id": task_id }),
                true,
                last_event_id,
            )
            .await?;
        stream_of(version, response)
    }

    /// A task (`GetTask` / `tasks/get`), with at most `history_length` messages.
    pub async fn get_task(
        &self,
        task_id: &str,
        history_length: Option<usize>,
    ) -> Result<TaskSnapshot, A2aClientError> {
        let (version, result) = self
            .call(("GetTask", "tasks/get"), |_| {
                let mut p = json!({ "id": task_id });
                if let Some(n) = history_length {
                    p["historyLength"] = json!(n);
                }
                p
            })
            .await?;
        wire::decode_task(version, result).map_err(A2aClientError::Decode)
    }

    /// Cancels a task (`CancelTask` / `tasks/cancel`).
    pub async fn cancel_task(&self, task_id: &str) -> Result<TaskSnapshot, A2aClientError> {
        let (version, result) = self
            .call(("CancelTask", "tasks/cancel"), |_| json!({ "id": task_id }))
            .await?;
        wire::decode_task(version, result).map_err(A2aClientError::Decode)
    }

    /// The caller's tasks (`ListTasks`, 1.0 only), optionally of one context.
    pub async fn list_tasks(
        &self,
        context_id: Option<&str>,
        page_size: Option<usize>,
        page_token: Option<&str>,
    ) -> Result<TaskPage, A2aClientError> {
        if self.version() == ProtocolVersion::V0_3 {
            return Err(A2aClientError::Unsupported(
                "ListTasks needs A2A 1.0".into(),
            ));
        }
        let (_, result) = self
            .call(("ListTasks", "ListTasks"), |_| {
                let mut p = json!({});
                if let Some(c) = context_id {
                    p["contextId"] = json!(c);
                }
                if let Some(n) = page_size {
                    p["pageSize"] = json!(n);
                }
                if let Some(t) = page_token {
                    p["pageToken"] = json!(t);
                }
                p
            })
            .await?;
        let (tasks, next) = wire::decode_list(result).map_err(A2aClientError::Decode)?;
        Ok(TaskPage {
            tasks,
            next_page_token: (!next.is_empty()).then_some(next),
        })
    }
}
