//! [`AnthropicProvider`]: the HTTP client, the whole call and the span.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::provider::{deadline_after, snippet};
use looopy_core::{ChatSpan, LlmError, LlmRequest, LlmResponse, TurnContext};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;

use crate::config::AnthropicConfig;
use crate::decode::{MessageResponse, message_to_response};
use crate::error::{from_reqwest, from_status};
use crate::wire::{BodyOptions, MessagesRequest};

/// Claude, through Anthropic's Messages API (`POST /v1/messages`).
///
/// Cheap to clone (the HTTP connection pool is shared). Each call runs in a
/// `chat {model}` span with the GenAI semantic-convention fields
/// (`gen_ai.provider.name` = `anthropic`, the token counts, the cache
/// counts), or in the agent loop's own `chat` span when there is one.
///
/// Errors are never retried here: an `AgentLoop` wraps its model in
/// `looopy_loop::layers::RetryingLlm` by default, which retries 429, 529
/// (overloaded) and 5xx answers, waiting as `retry-after` asks.
#[derive(Clone, Debug)]
pub struct AnthropicProvider {
    pub(crate) config: Arc<AnthropicConfig>,
    http: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
}

impl AnthropicProvider {
    /// A provider with its own HTTP client. Fails with
    /// [`LlmError::NotConfigured`] for a bad base URL, header or thinking
    /// budget ([`AnthropicConfig::validate`]).
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| LlmError::NotConfigured {
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Self::with_http_client(config, http)
    }

    /// A provider for `model` with the key from `ANTHROPIC_API_KEY` and the
    /// base URL from `ANTHROPIC_BASE_URL` (see [`AnthropicConfig::from_env`]).
    pub fn from_env(model: impl Into<String>) -> Result<Self, LlmError> {
        Self::new(AnthropicConfig::from_env(model)?)
    }

    /// A provider sending through the given client (to share a pool, or to
    /// set proxies and TLS roots).
    pub fn with_http_client(
        config: AnthropicConfig,
        http: reqwest::Client,
    ) -> Result<Self, LlmError> {
        config.validate()?;
        let endpoint =
            reqwest::Url::parse(&config.endpoint()).map_err(|e| LlmError::NotConfigured {
                message: format!("invalid base URL {:?}: {e}", config.base_url),
            })?;
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let version =
            HeaderValue::from_str(&config.api_version).map_err(|_| LlmError::NotConfigured {
                message: format!("invalid anthropic-version {:?}", config.api_version),
            })?;
        headers.insert("anthropic-version", version);
        if let Some(key) = &config.api_key {
            let mut value =
                HeaderValue::from_str(key.expose()).map_err(|_| LlmError::NotConfigured {
                    message: "the API key holds characters not allowed in an HTTP header".into(),
                })?;
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        for (name, value) in &config.extra_headers {
            let n =
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| LlmError::NotConfigured {
                    message: format!("invalid header name {name:?}"),
                })?;
            let mut v = HeaderValue::from_str(value).map_err(|_| LlmError::NotConfigured {
                message: format!("invalid value for header {name:?}"),
            })?;
            v.set_sensitive(true);
            headers.append(n, v);
        }
        Ok(AnthropicProvider {
            config: Arc::new(config),
            http,
            endpoint,
            headers,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    pub(crate) fn model_for<'r>(&'r self, request: &'r LlmRequest) -> &'r str {
        request.model.as_deref().unwrap_or(&self.config.model)
    }

    /// The request body.
    pub(crate) fn body(&self, request: &LlmRequest, stream: bool) -> Result<Vec<u8>, LlmError> {
        let c = &self.config;
        let body = MessagesRequest::new(
            request,
            &BodyOptions {
                model: self.model_for(request),
                provider_name: &c.provider_name,
                max_tokens: request
                    .max_tokens
                    .or(request.max_completion_tokens)
                    .unwrap_or(c.max_tokens),
                thinking_budget_tokens: c.thinking_budget_tokens,
                prompt_cache: c.prompt_cache,
                native_structured_output: c.native_structured_output,
                temperature: request.temperature.or(c.temperature),
                tool_choice: request.tool_choice.as_ref().or(c.tool_choice.as_ref()),
                parallel_tool_calls: request.parallel_tool_calls.or(c.parallel_tool_calls),
                stream,
            },
        );
        serde_json::to_vec(&body).map_err(|e| LlmError::BadRequest {
            message: format!("cannot serialize the request: {e}"),
        })
    }

    /// Posts `body`.
    pub(crate) async fn send(
        &self,
        body: Vec<u8>,
        stream: bool,
    ) -> Result<reqwest::Response, LlmError> {
        let mut headers = self.headers.clone();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static(if stream {
                "text/event-stream"
            } else {
                "application/json"
            }),
        );
        self.http
            .post(self.endpoint.clone())
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| from_reqwest(&e, "sending the request"))
    }

    /// The span a call runs in ([`ChatSpan::for_call`]).
    pub(crate) fn call_span(&self, model: &str) -> ChatSpan {
        ChatSpan::for_call(&self.config.provider_name, model)
    }

    pub(crate) fn deadline(&self) -> Instant {
        after(self.config.request_timeout)
    }

    pub(crate) fn timeout_error(&self, what: &str, limit: Duration) -> LlmError {
        LlmError::Timeout {
            message: format!("{what} (limit {limit:?}, endpoint {})", self.endpoint),
        }
    }

    /// The whole (not streamed) call, in the current span.
    pub(crate) async fn call_inner(
        &self,
        request: LlmRequest,
        cx: &TurnContext,
    ) -> Result<LlmResponse, LlmError> {
        let body = self.body(&request, false)?;
        let work = async {
            let response = self.send(body, false).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| from_reqwest(&e, "reading the response"))?;
            if !status.is_success() {
                return Err(from_status(
                    status.as_u16(),
                    &headers,
                    &String::from_utf8_lossy(&bytes),
                ));
            }
            let message: MessageResponse =
                serde_json::from_slice(&bytes).map_err(|e| LlmError::MalformedResponse {
                    message: format!("invalid message JSON ({e}): {}", snippet(&bytes)),
                })?;
            Ok(message_to_response(message, &self.config.provider_name))
        };
        tokio::select! {
            biased;
            _ = cx.cancel.cancelled() => Err(LlmError::Cancelled),
            r = tokio::time::timeout_at(self.deadline(), work) => r.unwrap_or_else(|_| {
                Err(self.timeout_error("no complete answer in time", self.config.request_timeout))
            }),
        }
    }
}

/// `limit` from now ([`deadline_after`]), on tokio's clock.
pub(crate) fn after(limit: Duration) -> Instant {
    Instant::from_std(deadline_after(Instant::now().into_std(), limit))
}
