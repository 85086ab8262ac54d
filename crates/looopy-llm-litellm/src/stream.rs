//! The streamed call: server-sent events over the response body (read by
//! [`SseParser`]), decoded into [`LlmChunk`]s by the API's [`EventDecoder`]
//! (chat completions' [`ChunkDecoder`], the Responses API's
//! [`ResponsesDecoder`](crate::responses_decode::ResponsesDecoder)).
//!
//! Dropping the stream drops the response body, which closes the connection
//! and so aborts the request on the server.

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use looopy_core::provider::{SseParser, snippet};
use looopy_core::{
    ChatSpan, FinishReason, LlmChunk, LlmError, LlmRequest, LlmResponse, LlmStream, TurnContext,
    Usage, WhenCancelled,
};
use reqwest::header;
use tokio::time::Sleep;
use tracing::Instrument;

use crate::client::{LiteLlmProvider, after};
use crate::decode::{ChunkDecoder, completion_to_response};
use crate::error::{from_reqwest, from_status};
use crate::wire::{ChatChunk, ChatCompletion};

type Body = BoxStream<'static, Result<Bytes, reqwest::Error>>;

/// How one API's event stream is read: the data of each event, the end of
/// the stream, and a whole JSON answer sent instead of a stream.
pub(crate) trait EventDecoder: Send {
    /// One event's data (trimmed, not empty), pushing what it means onto
    /// `out`. `Ok(true)` when it ends the stream.
    fn event(&mut self, data: &str, out: &mut VecDeque<LlmChunk>) -> Result<bool, LlmError>;

    /// The event that ends a stream, for the messages of cut streams.
    const END: &'static str;

    /// A whole JSON answer (some servers answer a stream request with one).
    fn whole(&self, bytes: &[u8]) -> Result<LlmResponse, LlmError>;

    /// The finish reason so far.
    fn finish_reason(&self) -> FinishReason;

    /// Usage, when the server sent it.
    fn usage(&self) -> Option<Usage>;

    /// The model the server named.
    fn model(&self) -> Option<&str>;
}

impl EventDecoder for ChunkDecoder {
    fn event(&mut self, data: &str, out: &mut VecDeque<LlmChunk>) -> Result<bool, LlmError> {
        if data == "[DONE]" {
            self.finish(out);
            return Ok(true);
        }
        let chunk: ChatChunk =
            serde_json::from_str(data).map_err(|e| LlmError::MalformedResponse {
                message: format!("invalid chunk JSON ({e}): {}", snippet(data.as_bytes())),
            })?;
        self.decode(chunk, out)?;
        Ok(false)
    }

    const END: &'static str = "[DONE]";

    fn whole(&self, bytes: &[u8]) -> Result<LlmResponse, LlmError> {
        let completion: ChatCompletion =
            serde_json::from_slice(bytes).map_err(|e| LlmError::MalformedResponse {
                message: format!("invalid completion JSON ({e}): {}", snippet(bytes)),
            })?;
        completion_to_response(completion)
    }

    fn finish_reason(&self) -> FinishReason {
        ChunkDecoder::finish_reason(self)
    }

    fn usage(&self) -> Option<Usage> {
        ChunkDecoder::usage(self)
    }

    fn model(&self) -> Option<&str> {
        ChunkDecoder::model(self)
    }
}

enum Phase {
    /// Not sent yet: the request body, or why it could not be written.
    Start(Result<Vec<u8>, LlmError>),
    /// Reading the response body's events.
    Reading(Body),
    /// Over (after `[DONE]` or an error).
    Done,
}

/// What bounds the wait for each piece, made once per call when it is
/// sent: every read waits on the same cancellation, deadline and idle
/// timers (the idle one moved forward before each read) rather than
/// registering new ones per chunk.
struct Limits<'a> {
    provider: &'a LiteLlmProvider,
    /// Polled with every chunk: the cheap wait.
    cancelled: WhenCancelled,
    /// The whole request's limit, counted from the first poll.
    deadline: Pin<Box<Sleep>>,
    /// No data for `stream_idle_timeout`.
    idle: Pin<Box<Sleep>>,
}

impl<'a> Limits<'a> {
    fn new(provider: &'a LiteLlmProvider, cx: &TurnContext) -> Self {
        let idle = after(provider.config.stream_idle_timeout);
        Limits {
            provider,
            cancelled: WhenCancelled::new(&cx.cancel),
            deadline: Box::pin(tokio::time::sleep_until(provider.deadline())),
            idle: Box::pin(tokio::time::sleep_until(idle)),
        }
    }

    /// Runs `work` unless the turn is cancelled or the request deadline
    /// passes (cancellation first, then the work, then the deadline).
    async fn guard<T>(
        &mut self,
        work: impl Future<Output = Result<T, LlmError>>,
    ) -> Result<T, LlmError> {
        tokio::select! {
            biased;
            () = &mut self.cancelled => Err(LlmError::Cancelled),
            r = work => r,
            () = &mut self.deadline => Err(past_deadline(self.provider)),
        }
    }

    /// [`guard`](Self::guard) on reading a whole response body.
    async fn body(&mut self, response: reqwest::Response, what: &str) -> Result<Bytes, LlmError> {
        self.guard(async { response.bytes().await.map_err(|e| from_reqwest(&e, what)) })
            .await
    }

    /// [`guard`](Self::guard) on waiting for the next piece of the body,
    /// which must come within the idle timeout.
    async fn next_bytes(&mut self, body: &mut Body) -> Result<Option<BodyItem>, LlmError> {
        let provider = self.provider;
        let idle = provider.config.stream_idle_timeout;
        self.idle.as_mut().reset(after(idle));
        let Limits {
            cancelled,
            deadline,
            idle: idle_timer,
            ..
        } = self;
        tokio::select! {
            biased;
            () = cancelled => Err(LlmError::Cancelled),
            next = body.next() => Ok(next),
            () = idle_timer => Err(provider.timeout_error("no stream data within the idle timeout", idle)),
            () = deadline => Err(past_deadline(provider)),
        }
    }
}

/// The error of a stream still going at the request's deadline.
fn past_deadline(provider: &LiteLlmProvider) -> LlmError {
    provider.timeout_error(
        "the stream did not finish in time",
        provider.config.request_timeout,
    )
}

type BodyItem = Result<Bytes, reqwest::Error>;

struct State<'a, D> {
    limits: Limits<'a>,
    span: ChatSpan,
    phase: Phase,
    sse: SseParser,
    decoder: D,
    pending: VecDeque<LlmChunk>,
}

/// The stream of one chat completions call.
pub(crate) fn chat_stream<'a>(
    provider: &'a LiteLlmProvider,
    request: LlmRequest,
    cx: &'a TurnContext,
) -> LlmStream<'a> {
    let span = provider.call_span(provider.model_for(&request));
    let body = provider.body(&request, true);
    event_stream(provider, span, body, ChunkDecoder::default(), cx)
}

/// The stream of one call posting `body` through `provider`'s client and
/// reading the answer with `decoder`.
pub(crate) fn event_stream<'a, D: EventDecoder + 'a>(
    provider: &'a LiteLlmProvider,
    span: ChatSpan,
    body: Result<Vec<u8>, LlmError>,
    decoder: D,
    cx: &'a TurnContext,
) -> LlmStream<'a> {
    // Boxed: `unfold` moves its state into each chunk's future and back
    // out, and this one is large (the timers, the span, the event parser).
    let state = Box::new(State {
        limits: Limits::new(provider, cx),
        span,
        phase: Phase::Start(body),
        sse: SseParser::default(),
        decoder,
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
async fn next<D: EventDecoder>(state: &mut State<'_, D>) -> Option<Result<LlmChunk, LlmError>> {
    loop {
        if let Some(chunk) = state.pending.pop_front() {
            return Some(Ok(chunk));
        }
        let step = match std::mem::replace(&mut state.phase, Phase::Done) {
            Phase::Done => return None,
            Phase::Start(body) => start(state, body).await,
            Phase::Reading(mut body) => match read(state, &mut body).await {
                Ok(true) => {
                    state.phase = Phase::Reading(body);
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
            // The phase stays `Done`: an error ends the stream.
            state.span.error(&e);
            return Some(Err(e));
        }
    }
}

/// Sends the request; on success the phase becomes `Reading` (or the whole
/// answer is queued, for servers that answer a stream request with JSON).
async fn start<D: EventDecoder>(
    state: &mut State<'_, D>,
    body: Result<Vec<u8>, LlmError>,
) -> Result<(), LlmError> {
    // The whole-request limit counts from the first poll, not from creation.
    let provider = state.limits.provider;
    state.limits.deadline.as_mut().reset(provider.deadline());
    let limits = &mut state.limits;
    let body = body?;
    let response = limits.guard(provider.send(body, true)).await?;
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        let bytes = limits.body(response, "reading the error response").await?;
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
        let bytes = limits.body(response, "reading the response").await?;
        let response = state.decoder.whole(&bytes)?;
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

/// Reads events until some chunks are queued. `Ok(false)` after the end
/// event (`[DONE]`).
async fn read<D: EventDecoder>(
    state: &mut State<'_, D>,
    body: &mut Body,
) -> Result<bool, LlmError> {
    while state.pending.is_empty() {
        if let Some(data) = state.sse.next_event() {
            let data = data.trim_ascii();
            if data.is_empty() {
                continue;
            }
            // Checked once here: parsing bytes would check every string
            // of the chunk on its own, a call each.
            let text = std::str::from_utf8(data).map_err(|e| LlmError::MalformedResponse {
                message: format!("invalid chunk (not UTF-8: {e}): {}", snippet(data)),
            })?;
            if state.decoder.event(text, &mut state.pending)? {
                return Ok(false);
            }
            continue;
        }
        match state.limits.next_bytes(body).await? {
            None => {
                return Err(LlmError::MalformedResponse {
                    message: format!("the stream ended before {}", D::END),
                });
            }
            Some(Err(e)) => {
                let what = format!("the stream was cut before {}", D::END);
                return Err(from_reqwest(&e, &what));
            }
            Some(Ok(bytes)) => state.sse.feed(&bytes),
        }
    }
    Ok(true)
}
