//! [`LiteLlmProvider`]: the HTTP client and the non-streaming call.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use looopy_core::provider::deadline_after;
use looopy_core::{ChatSpan, LlmError, LlmRequest, LlmResponse, TurnContext};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::time::Instant;

use crate::config::LiteLlmConfig;
use crate::error::{from_reqwest, from_status};
use crate::tools_json::ToolsJson;
use crate::wire::ChatRequest;

/// A model behind LiteLLM or any OpenAI-compatible chat completions endpoint.
///
/// Cheap to clone (the HTTP connection pool is shared). Each call emits a
/// `chat {model}` span with the GenAI semantic-convention fields, and (with
/// the default `otel` feature) sends the span's W3C `traceparent`.
///
/// Errors are never retried here: an `AgentLoop` wraps its model in
/// `looopy_loop::layers::RetryingLlm` by default; wrap the provider
/// yourself only to call it outside a loop.
#[derive(Clone, Debug)]
pub struct LiteLlmProvider {
    pub(crate) config: Arc<LiteLlmConfig>,
    http: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    /// Shared by the provider's clones (every conversation of a served agent).
    tools_json: Arc<ToolsJson>,
}

impl LiteLlmProvider {
    /// A provider with its own HTTP client (using the configured connect
    /// timeout). Fails with [`LlmError::NotConfigured`] for a bad base URL or
    /// header.
    pub fn new(config: LiteLlmConfig) -> Result<Self, LlmError> {
        let http = http_client(&config)?;
        Self::with_http_client(config, http)
    }

    /// A provider configured from `LOOOPY_LLM_BASE_URL`, `LOOOPY_LLM_API_KEY`
    /// and `LOOOPY_LLM_MODEL` (see [`LiteLlmConfig::from_env`]).
    pub fn from_env() -> Result<Self, LlmError> {
        Self::new(LiteLlmConfig::from_env()?)
    }

    /// A provider sending through the given client (to share a pool, or to
    /// set proxies and TLS roots). The client's own timeouts apply on top of
    /// the configured request and idle timeouts.
    pub fn with_http_client(
        config: LiteLlmConfig,
        http: reqwest::Client,
    ) -> Result<Self, LlmError> {
        let endpoint = config.endpoint();
        Self::posting_to(config, http, &endpoint)
    }

    /// A provider whose requests go to `endpoint` (the Responses API's
    /// provider sends through one).
    pub(crate) fn posting_to(
        config: LiteLlmConfig,
        http: reqwest::Client,
        endpoint: &str,
    ) -> Result<Self, LlmError> {
        let endpoint = reqwest::Url::parse(endpoint).map_err(|e| LlmError::NotConfigured {
            message: format!("invalid base URL {:?}: {e}", config.base_url),
        })?;
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(key) = &config.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    LlmError::NotConfigured {
                        message: "the API key holds characters not allowed in an HTTP header"
                            .into(),
                    }
                })?;
            value.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, value);
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
        Ok(LiteLlmProvider {
            config: Arc::new(config),
            http,
            endpoint,
            headers,
            tools_json: Arc::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LiteLlmConfig {
        &self.config
    }

    pub(crate) fn model_for<'r>(&'r self, request: &'r LlmRequest) -> &'r str {
        request.model.as_deref().unwrap_or(&self.config.model)
    }

    /// The request body. `LlmRequest.metadata["extra_body"]`, an object, is
    /// merged into the top level (as the OpenAI SDKs' `extra_body`).
    pub(crate) fn body(&self, request: &LlmRequest, stream: bool) -> Result<Vec<u8>, LlmError> {
        let c = &self.config;
        let format = request.response_format.as_ref();
        let native = c.native_structured_output;
        let system_prompt = match (format, request.system_prompt.as_deref()) {
            // Without native support the model learns the shape from the prompt.
            (Some(f), Some(prompt)) if !native => {
                Some(Cow::Owned(format!("{prompt}\n\n{}", f.instruction())))
            }
            (Some(f), None) if !native => Some(Cow::Owned(f.instruction())),
            (_, prompt) => prompt.map(Cow::Borrowed),
        };
        let tools = if request.tools.is_empty() {
            None
        } else {
            let json = self
                .tools_json
                .of(&request.tools)
                .map_err(|e| LlmError::BadRequest {
                    message: format!("cannot serialize the tool definitions: {e}"),
                })?;
            Some(json)
        };
        let body = ChatRequest {
            model: self.model_for(request),
            system_prompt,
            messages: &request.messages,
            tools: tools.as_deref(),
            tool_choice: request.tool_choice.as_ref().or(c.tool_choice.as_ref()),
            temperature: request.temperature.or(c.temperature),
            max_tokens: request.max_tokens.or(c.max_tokens),
            max_completion_tokens: request.max_completion_tokens.or(c.max_completion_tokens),
            parallel_tool_calls: request.parallel_tool_calls.or(c.parallel_tool_calls),
            response_format: format.filter(|_| native),
            stream,
            extra_body: request
                .metadata
                .get("extra_body")
                .and_then(Value::as_object),
        };
        serde_json::to_vec(&body).map_err(|e| LlmError::BadRequest {
            message: format!("cannot serialize the request: {e}"),
        })
    }

    /// Posts `body`. Must run inside the call's span (its trace context is
    /// sent along).
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
        #[cfg(feature = "otel")]
        crate::otel::inject_current_context(&mut headers);
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

    /// One non-streamed call posting `body` and reading the answer with
    /// `decode`, in the current span.
    pub(crate) async fn call_with(
        &self,
        body: Result<Vec<u8>, LlmError>,
        decode: impl FnOnce(&[u8]) -> Result<LlmResponse, LlmError>,
        cx: &TurnContext,
    ) -> Result<LlmResponse, LlmError> {
        let body = body?;
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
            decode(&bytes)
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

/// An HTTP client with the configured connect timeout.
pub(crate) fn http_client(config: &LiteLlmConfig) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .build()
        .map_err(|e| LlmError::NotConfigured {
            message: format!("cannot build the HTTP client: {e}"),
        })
}

/// `limit` from now ([`deadline_after`]), on tokio's clock.
pub(crate) fn after(limit: Duration) -> Instant {
    Instant::from_std(deadline_after(Instant::now().into_std(), limit))
}
