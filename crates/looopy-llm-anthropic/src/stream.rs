//! The streamed call: server-sent events (read by
//! [`SseParser`](looopy_core::provider::SseParser)) decoded into
//! [`LlmChunk`]s.
//!
//! Dropping the stream drops the response body, which closes the
//! connection and so aborts the request on the server.

use std::collections::VecDeque;

use futures::stream::{self, BoxStream, StreamExt};
use looopy_core::provider::{SseParser, decode_event, snippet};
use looopy_core::{ChatSpan, LlmChunk, LlmError, LlmRequest, LlmStream, TurnContext};
use reqwest::header;
use tokio::time::Instant;
use tracing::Instrument;

use crate::client::{AnthropicProvider, after};
use crate::decode::{MessageResponse, StreamDecoder, StreamEvent, message_to_response};
use crate::error::{from_reqwest, from_status};

/// The response body, as it arrives.
type Events = BoxStream<'static, reqwest::Result<bytes::Bytes>>;

enum Phase {
    /// Not sent yet.
    Start(Box<LlmRequest>),
    /// Reading the events.
    Reading(Events),
    /// Over (after `message_stop` or an error).
    Done,
}

struct State<'a> {
    provider: &'a AnthropicProvider,
    cx: &'a TurnContext,
    span: ChatSpan,
    phase: Phase,
    deadline: Instant,
    decoder: StreamDecoder,
    sse: SseParser,
    pending: VecDeque<LlmChunk>,
}

impl<'a> State<'a> {
    fn limits(&self) -> Limits<'a> {
        Limits {
            provider: self.provider,
            cx: self.cx,
            deadline: self.deadline,
        }
    }
}

/// The stream of one call.
pub(crate) fn messages_stream<'a>(
    provider: &'a AnthropicProvider,
    request: LlmRequest,
    cx: &'a TurnContext,
) -> LlmStream<'a> {
    let state = Box::new(State {
        provider,
        cx,
        span: provider.call_span(provider.model_for(&request)),
        phase: Phase::Start(Box::new(request)),
        deadline: provider.deadline(),
        decoder: StreamDecoder::new(&provider.config.provider_name),
        sse: SseParser::default(),
        pending: VecDeque::new(),
    });
    stream::unfold(state, |mut state| async move {
        let span = state.span.span().clone();
        let item = next(&mut state).instrument(span).await;
        item.map(|item| (item, state))
    })
    .boxed()
}

/// The next item; `None` once the stream is over.
async fn next(state: &mut State<'_>) -> Option<Result<LlmChunk, LlmError>> {
    loop {
        if let Some(chunk) = state.pending.pop_front() {
            return Some(Ok(chunk));
        }
        let step = match std::mem::replace(&mut state.phase, Phase::Done) {
            Phase::Done => return None,
            Phase::Start(request) => start(state, *request).await,
            Phase::Reading(mut events) => match read(state, &mut events).await {
                Ok(true) => {
                    state.phase = Phase::Reading(events);
                    Ok(())
                }
                Ok(false) => {
                    let d = &state.decoder;
                    state
                        .span
                        .success(d.finish_reason().as_str(), d.usage(), d.model());
                    Ok(())
                }
                Err(e) => Err(e),
            },
        };
        if let Err(e) = step {
            state.span.error(&e);
            return Some(Err(e));
        }
    }
}

/// What bounds every wait of a call.
#[derive(Clone, Copy)]
struct Limits<'a> {
    provider: &'a AnthropicProvider,
    cx: &'a TurnContext,
    deadline: Instant,
}

/// Runs `work` unless the turn is cancelled or the deadline passes.
async fn guard<T>(
    limits: Limits<'_>,
    work: impl Future<Output = Result<T, LlmError>>,
) -> Result<T, LlmError> {
    let provider = limits.provider;
    tokio::select! {
        biased;
        () = limits.cx.cancel.cancelled() => Err(LlmError::Cancelled),
        r = work => r,
        () = tokio::time::sleep_until(limits.deadline) => Err(provider.timeout_error(
            "the stream did not finish in time",
            provider.config.request_timeout,
        )),
    }
}

async fn start(state: &mut State<'_>, request: LlmRequest) -> Result<(), LlmError> {
    let provider = state.provider;
    state.deadline = provider.deadline();
    let body = provider.body(&request, true)?;
    let limits = state.limits();
    let response = guard(limits, provider.send(body, true)).await?;
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        let bytes = guard(limits, async {
            response
                .bytes()
                .await
                .map_err(|e| from_reqwest(&e, "reading the error response"))
        })
        .await?;
        return Err(from_status(
            status.as_u16(),
            &headers,
            &String::from_utf8_lossy(&bytes),
        ));
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        // A server (a proxy, a mock) that answers a stream request whole.
        let bytes = guard(limits, async {
            response
                .bytes()
                .await
                .map_err(|e| from_reqwest(&e, "reading the response"))
        })
        .await?;
        let message: MessageResponse =
            serde_json::from_slice(&bytes).map_err(|e| LlmError::MalformedResponse {
                message: format!("invalid message JSON ({e}): {}", snippet(&bytes)),
            })?;
        let response = message_to_response(message, &provider.config.provider_name);
        state.span.success(
            response.finish_reason.as_str(),
            response.usage,
            response.model.as_deref(),
        );
        state.pending.extend(response.into_chunks());
        return Ok(());
    }
    state.phase = Phase::Reading(response.bytes_stream().boxed());
    Ok(())
}

/// Reads events until some chunks are queued. `Ok(false)` after
/// `message_stop`.
async fn read(state: &mut State<'_>, events: &mut Events) -> Result<bool, LlmError> {
    let idle = state.provider.config.stream_idle_timeout;
    let limits = state.limits();
    while state.pending.is_empty() {
        if let Some(data) = state.sse.next_event() {
            let data = data.trim_ascii();
            if data.is_empty() {
                continue;
            }
            let parsed: StreamEvent = decode_event(data)?;
            state.decoder.decode(parsed, &mut state.pending)?;
            if state.decoder.is_finished() {
                return Ok(false);
            }
            continue;
        }
        let next = guard(limits, async {
            tokio::time::timeout_at(after(idle), events.next())
                .await
                .map_err(|_| {
                    limits
                        .provider
                        .timeout_error("no stream data within the idle timeout", idle)
                })
        })
        .await?;
        match next {
            None => {
                return Err(LlmError::MalformedResponse {
                    message: "the stream ended before message_stop".into(),
                });
            }
            Some(Err(e)) => {
                return Err(from_reqwest(&e, "the stream was cut before message_stop"));
            }
            Some(Ok(bytes)) => state.sse.feed(&bytes),
        }
    }
    Ok(true)
}
