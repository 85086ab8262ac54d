//! [`GeminiProvider`]: the HTTP client, the request body, the call and the
//! stream.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};
use looopy_core::provider::{SseParser, deadline_after, decode_event, snippet};
use looopy_core::{
    ChatSpan, LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream,
    ResponseAssembler, TurnContext, WhenCancelled,
};
use reqwest::header::{self, HeaderMap, HeaderValue};
use tokio::time::{Instant, Sleep};
use tracing::Instrument;

use crate::config::GeminiConfig;
use crate::decode::GeminiDecoder;
use crate::error::{from_reqwest, from_status};
use crate::wire::{
    Content, GenerateRequest, GenerateResponse, GenerationConfig, PROVIDER_NAME, ThinkingConfig,
    ToolConfig, WirePart, contents, tool_lists,
};

/// A Gemini model behind the Gemini API (`generateContent`,
/// `streamGenerateContent?alt=sse`), authenticated by `x-goog-api-key`.
///
/// Cheap to clone. Each call emits a `chat {model}` span with the GenAI
/// fields (or runs in the caller's `chat` span, as the agent loop opens
/// one). Errors are never retried here: the loop's `RetryingLlm` does.
#[derive(Clone, Debug)]
pub struct GeminiProvider {
    config: Arc<GeminiConfig>,
    http: reqwest::Client,
    headers: HeaderMap,
}

impl GeminiProvider {
    /// A provider with its own HTTP client. Fails with
    /// [`LlmError::NotConfigured`] for a key that cannot be a header.
    pub fn new(config: GeminiConfig) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| LlmError::NotConfigured {
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Self::with_http_client(config, http)
    }

    /// A provider for `model` configured from the environment (see
    /// [`GeminiConfig::from_env`]).
    pub fn from_env(model: impl Into<String>) -> Result<Self, LlmError> {
        Self::new(GeminiConfig::from_env(model)?)
    }

    /// A provider sending through the given client.
    pub fn with_http_client(config: GeminiConfig, http: reqwest::Client) -> Result<Self, LlmError> {
        reqwest::Url::parse(&config.endpoint(&config.model, false)).map_err(|e| {
            LlmError::NotConfigured {
                message: format!("invalid base URL {:?}: {e}", config.base_url),
            }
        })?;
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(key) = &config.api_key {
            let mut value =
                HeaderValue::from_str(key.expose()).map_err(|_| LlmError::NotConfigured {
                    message: "the API key holds characters not allowed in an HTTP header".into(),
                })?;
            value.set_sensitive(true);
            headers.insert("x-goog-api-key", value);
        }
        Ok(GeminiProvider {
            config: Arc::new(config),
            http,
            headers,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GeminiConfig {
        &self.config
    }

    fn model_for<'r>(&'r self, request: &'r LlmRequest) -> &'r str {
        request.model.as_deref().unwrap_or(&self.config.model)
    }

    /// The request body.
    pub(crate) fn body(&self, request: &LlmRequest) -> Result<Vec<u8>, LlmError> {
        let c = &self.config;
        let thinking =
            (c.include_thoughts || c.thinking_budget.is_some()).then_some(ThinkingConfig {
                thinking_budget: c.thinking_budget,
                include_thoughts: c.include_thoughts,
            });
        let body = GenerateRequest {
            system_instruction: request.system_prompt.as_deref().map(|s| Content {
                role: None,
                parts: vec![WirePart::text(s)],
            }),
            contents: contents(&request.messages),
            tools: tool_lists(&request.tools),
            tool_config: request
                .tool_choice
                .as_ref()
                .filter(|_| !request.tools.is_empty())
                .map(ToolConfig::of),
            generation_config: GenerationConfig {
                temperature: request.temperature.or(c.temperature),
                max_output_tokens: request
                    .max_completion_tokens
                    .or(request.max_tokens)
                    .or(c.max_output_tokens),
                thinking_config: thinking,
                ..GenerationConfig::default()
            }
            .with_format(request.response_format.as_ref()),
        };
        serde_json::to_vec(&body).map_err(|e| LlmError::BadRequest {
            message: format!("cannot serialize the request: {e}"),
        })
    }

    async fn send(
        &self,
        model: &str,
        body: Vec<u8>,
        stream: bool,
    ) -> Result<reqwest::Response, LlmError> {
        let response = self
            .http
            .post(self.config.endpoint(model, stream))
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
            .map_err(|e| from_reqwest(&e, "sending the request"))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = response
            .bytes()
            .await
            .map_err(|e| from_reqwest(&e, "reading the error response"))?;
        Err(from_status(
            status.as_u16(),
            retry_after.as_deref(),
            &String::from_utf8_lossy(&bytes),
        ))
    }

    fn call_span(&self, model: &str) -> ChatSpan {
        ChatSpan::for_call(PROVIDER_NAME, model)
    }

    fn timeout(&self, what: &str, limit: Duration) -> LlmError {
        LlmError::Timeout {
            message: format!("{what} (limit {limit:?}, model {})", self.config.model),
        }
    }

    async fn call_inner(
        &self,
        request: LlmRequest,
        cx: &TurnContext,
    ) -> Result<LlmResponse, LlmError> {
        let body = self.body(&request)?;
        let model = self.model_for(&request);
        let work = async {
            let response = self.send(model, body, false).await?;
            let bytes = response
                .bytes()
                .await
                .map_err(|e| from_reqwest(&e, "reading the response"))?;
            let answer = parse_answer(&bytes)?;
            let mut decoder = GeminiDecoder::default();
            let mut chunks = VecDeque::new();
            decoder.decode(answer, &mut chunks)?;
            decoder.finish(&mut chunks);
            let mut assembler = ResponseAssembler::new();
            chunks.iter().for_each(|c| assembler.push(c));
            let mut response = assembler.finish();
            response.model = decoder.model().map(str::to_owned);
            Ok(response)
        };
        let limit = self.config.request_timeout;
        tokio::select! {
            biased;
            () = cx.cancel.cancelled() => Err(LlmError::Cancelled),
            r = tokio::time::timeout_at(after(limit), work) => r.unwrap_or_else(|_| {
                Err(self.timeout("no complete answer in time", limit))
            }),
        }
    }
}

#[async_trait]
impl LlmProvider for GeminiProvider {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let span = self.call_span(self.model_for(&request));
        let result = self
            .call_inner(request, cx)
            .instrument(span.span().clone())
            .await;
        match &result {
            Ok(r) => span.success(r.finish_reason.as_str(), r.usage, r.model.as_deref()),
            Err(e) => span.error(e),
        }
        result
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        let span = self.call_span(self.model_for(&request));
        let limit = self.config.request_timeout;
        let state = Box::new(StreamState {
            provider: self,
            span,
            phase: Phase::Start(Box::new(request)),
            decoder: GeminiDecoder::default(),
            sse: SseParser::default(),
            pending: VecDeque::new(),
            cancelled: WhenCancelled::new(&cx.cancel),
            deadline: Box::pin(tokio::time::sleep_until(after(limit))),
        });
        stream::unfold(state, |mut state| async move {
            let span = state.span.span().clone();
            let item = state.next().instrument(span).await;
            item.map(|item| (item, state))
        })
        .boxed()
    }

    fn provider_name(&self) -> &str {
        PROVIDER_NAME
    }

    fn model_name(&self) -> &str {
        &self.config.model
    }
}

/// The response body, as it arrives.
type Events = BoxStream<'static, reqwest::Result<bytes::Bytes>>;

enum Phase {
    Start(Box<LlmRequest>),
    Reading(Events),
    Done,
}

struct StreamState<'a> {
    provider: &'a GeminiProvider,
    span: ChatSpan,
    phase: Phase,
    decoder: GeminiDecoder,
    sse: SseParser,
    pending: VecDeque<LlmChunk>,
    cancelled: WhenCancelled,
    deadline: Pin<Box<Sleep>>,
}

impl StreamState<'_> {
    async fn next(&mut self) -> Option<Result<LlmChunk, LlmError>> {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(Ok(chunk));
            }
            let step = match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Start(request) => self.start(*request).await,
                Phase::Reading(mut events) => match self.read(&mut events).await {
                    Ok(true) => {
                        self.phase = Phase::Reading(events);
                        Ok(())
                    }
                    Ok(false) => {
                        let d = &self.decoder;
                        self.span
                            .success(d.finish_reason().as_str(), d.usage(), d.model());
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = step {
                self.span.error(&e);
                return Some(Err(e));
            }
        }
    }

    async fn start(&mut self, request: LlmRequest) -> Result<(), LlmError> {
        let provider = self.provider;
        let limit = provider.config.request_timeout;
        self.deadline.as_mut().reset(after(limit));
        let body = provider.body(&request)?;
        let model = provider.model_for(&request);
        let response = tokio::select! {
            biased;
            () = &mut self.cancelled => Err(LlmError::Cancelled),
            r = provider.send(model, body, true) => r,
            () = &mut self.deadline => Err(provider.timeout("the stream did not finish in time", limit)),
        }?;
        let is_json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json {
            // A whole answer (a proxy or mock answering the stream request
            // with JSON): read as one event, then the end.
            let bytes = tokio::select! {
                biased;
                () = &mut self.cancelled => Err(LlmError::Cancelled),
                r = response.bytes() => r.map_err(|e| from_reqwest(&e, "reading the response")),
                () = &mut self.deadline => Err(provider.timeout("the stream did not finish in time", limit)),
            }?;
            let answer = parse_answer(&bytes)?;
            self.decoder.decode(answer, &mut self.pending)?;
            self.decoder.finish(&mut self.pending);
            let d = &self.decoder;
            self.span
                .success(d.finish_reason().as_str(), d.usage(), d.model());
            return Ok(());
        }
        self.phase = Phase::Reading(response.bytes_stream().boxed());
        Ok(())
    }

    /// Reads events until some chunks are queued; `Ok(false)` at the end.
    async fn read(&mut self, events: &mut Events) -> Result<bool, LlmError> {
        let provider = self.provider;
        let idle = provider.config.stream_idle_timeout;
        let limit = provider.config.request_timeout;
        while self.pending.is_empty() {
            if let Some(data) = self.sse.next_event() {
                let data = data.trim_ascii();
                if data.is_empty() {
                    continue;
                }
                let answer: GenerateResponse = decode_event(data)?;
                self.decoder.decode(answer, &mut self.pending)?;
                continue;
            }
            let next = tokio::select! {
                biased;
                () = &mut self.cancelled => return Err(LlmError::Cancelled),
                next = tokio::time::timeout(idle, events.next()) => next
                    .map_err(|_| provider.timeout("no stream data within the idle timeout", idle))?,
                () = &mut self.deadline => return Err(provider.timeout("the stream did not finish in time", limit)),
            };
            match next {
                None => {
                    // Gemini's stream has no end marker: the body ending is
                    // the end, once an event said why the model stopped.
                    if self.decoder.finish_reason_seen() {
                        self.decoder.finish(&mut self.pending);
                        return Ok(false);
                    }
                    return Err(LlmError::MalformedResponse {
                        message: "the stream ended before a finishReason".into(),
                    });
                }
                Some(Err(e)) => {
                    return Err(from_reqwest(&e, "the stream was cut"));
                }
                Some(Ok(bytes)) => self.sse.feed(&bytes),
            }
        }
        Ok(true)
    }
}

/// A whole `GenerateContentResponse`.
fn parse_answer(bytes: &[u8]) -> Result<GenerateResponse, LlmError> {
    serde_json::from_slice(bytes).map_err(|e| LlmError::MalformedResponse {
        message: format!("invalid response JSON ({e}): {}", snippet(bytes)),
    })
}

/// `limit` from now ([`deadline_after`]), on tokio's clock.
fn after(limit: Duration) -> Instant {
    Instant::from_std(deadline_after(Instant::now().into_std(), limit))
}
