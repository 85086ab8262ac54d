//! [`RetryingLlm`]: retries with exponential backoff and full jitter around
//! any [`LlmProvider`]; [`RetryPolicy`] is also the [`LlmLayer`] that puts
//! it there.
//!
//! Nothing here knows a wire protocol: a provider reports the server's
//! `Retry-After` through [`LlmError::retry_after`], and the policy reads it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self, StreamExt};
use looopy_core::{
    LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, TurnContext,
};

use looopy_core::record::{RecordedError, StepKind};

use super::LlmLayer;

/// When and how long to wait before trying a failed call again.
///
/// The defaults: at most 5 retries, delays drawn uniformly from
/// `0..=min(max_delay, base_delay * 2^retry)` ("full jitter") with a base of
/// 1 s and a cap of 60 s, retrying HTTP 429, 500, 502, 503 and 504,
/// connection failures and malformed responses (a body that is not a
/// completion, a completion without choices, a stream that ends or is cut
/// before `[DONE]`): a chat request is idempotent, so an answer that cannot
/// be read is worth another try like a 5xx, within the same budget and with
/// the same backoff. A `Retry-After` from the server, on a 429 or a 5xx
/// ([`LlmError::retry_after`]), replaces the drawn delay; when it asks for
/// more than `max_delay` the error is returned at once instead.
///
/// Never retried: authentication, not found, bad request, other statuses,
/// timeouts (unless [`retry_timeouts`](Self::retry_timeouts)), a call that
/// is not configured, a cancelled turn.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Backoff base: the ceiling of the first delay.
    pub base_delay: Duration,
    /// Ceiling of every delay.
    pub max_delay: Duration,
    /// HTTP statuses worth another try (see [`LlmError::status`]).
    pub retryable_statuses: Vec<u16>,
    /// Whether [`LlmError::Connection`] is retried.
    pub retry_connection_errors: bool,
    /// Whether [`LlmError::Timeout`] is retried.
    pub retry_timeouts: bool,
    /// Whether [`LlmError::MalformedResponse`] (an answer that cannot be
    /// parsed, a stream cut before its end) is retried.
    pub retry_malformed_responses: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            retryable_statuses: vec![429, 500, 502, 503, 504, 529],
            retry_connection_errors: true,
            retry_timeouts: false,
            retry_malformed_responses: true,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// Sets the number of retries.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Sets the backoff base and ceiling.
    pub fn with_delays(mut self, base_delay: Duration, max_delay: Duration) -> Self {
        self.base_delay = base_delay;
        self.max_delay = max_delay;
        self
    }

    /// Whether `error` is worth another try (ignoring the retry count).
    pub fn is_retryable(&self, error: &LlmError) -> bool {
        match error {
            LlmError::Connection { .. } => self.retry_connection_errors,
            LlmError::Timeout { .. } => self.retry_timeouts,
            LlmError::MalformedResponse { .. } => self.retry_malformed_responses,
            LlmError::Cancelled | LlmError::NotConfigured { .. } => false,
            e => e
                .status()
                .is_some_and(|s| self.retryable_statuses.contains(&s)),
        }
    }

    /// The wait before retry number `retry` (0-based) after `error`, or
    /// `None` when the error should be returned instead.
    pub fn delay_for(&self, retry: u32, error: &LlmError) -> Option<Duration> {
        self.decide(retry, error).ok()
    }

    /// The wait before retry number `retry` after `error`, or why not.
    fn decide(&self, retry: u32, error: &LlmError) -> Result<Duration, GiveUp> {
        if !self.is_retryable(error) {
            return Err(GiveUp::NotRetryable);
        }
        if retry >= self.max_retries {
            return Err(GiveUp::BudgetSpent);
        }
        if let Some(wait) = error.retry_after() {
            return if wait <= self.max_delay {
                Ok(wait)
            } else {
                Err(GiveUp::WaitTooLong(wait))
            };
        }
        let ceiling = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_delay);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Ok(Duration::from_nanos(rand::random_range(0..=nanos)))
    }
}

/// Wraps a model in a [`RetryingLlm`] with this policy; a policy of no
/// retries leaves the model as it is.
impl LlmLayer for RetryPolicy {
    fn layer(&self, inner: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        if self.max_retries == 0 {
            return inner;
        }
        Arc::new(RetryingLlm::new(inner, self.clone()))
    }
}

/// Why a failed call is not tried again.
#[derive(Debug, Clone, Copy, PartialEq)]
enum GiveUp {
    /// The error is not worth another try.
    NotRetryable,
    /// Every retry of the budget was used.
    BudgetSpent,
    /// The server asked to wait longer than `max_delay`.
    WaitTooLong(Duration),
    /// A stream failed after some of its chunks reached the caller.
    ChunksForwarded,
}

impl GiveUp {
    /// `error`, its message prefixed with the attempts made and why there is
    /// no other; its variant (hence `error.type`) is kept. An error of the
    /// first attempt that was simply not retryable, or that used a budget of
    /// no retries, is returned as it is.
    fn annotate(self, attempts: u32, policy: &RetryPolicy, error: LlmError) -> LlmError {
        let why = match self {
            GiveUp::NotRetryable | GiveUp::BudgetSpent if attempts <= 1 => return error,
            GiveUp::WaitTooLong(_) if attempts <= 1 => return error,
            GiveUp::NotRetryable => "this error is not retried".to_owned(),
            GiveUp::BudgetSpent => format!("all {} retries used", policy.max_retries),
            GiveUp::WaitTooLong(wait) => format!(
                "the server asked to wait {wait:?}, more than the {:?} cap",
                policy.max_delay
            ),
            GiveUp::ChunksForwarded => {
                "not retried: the stream had already forwarded chunks".to_owned()
            }
        };
        let plural = if attempts == 1 { "" } else { "s" };
        let note = format!("gave up after {attempts} attempt{plural} ({why}); last: ");
        prefix_message(error, &note)
    }
}

/// `error` with `note` put before its message, in the same variant.
pub(super) fn prefix_message(error: LlmError, note: &str) -> LlmError {
    let p = |message: String| format!("{note}{message}");
    match error {
        LlmError::Authentication { message } => LlmError::Authentication {
            message: p(message),
        },
        LlmError::NotFound { message } => LlmError::NotFound {
            message: p(message),
        },
        LlmError::BadRequest { message } => LlmError::BadRequest {
            message: p(message),
        },
        LlmError::RateLimited {
            message,
            retry_after,
        } => LlmError::RateLimited {
            message: p(message),
            retry_after,
        },
        LlmError::ContextLengthExceeded { message } => LlmError::ContextLengthExceeded {
            message: p(message),
        },
        LlmError::ContentFilter { message } => LlmError::ContentFilter {
            message: p(message),
        },
        LlmError::Overloaded {
            message,
            retry_after,
        } => LlmError::Overloaded {
            message: p(message),
            retry_after,
        },
        LlmError::Server {
            status,
            message,
            retry_after,
        } => LlmError::Server {
            status,
            message: p(message),
            retry_after,
        },
        LlmError::Timeout { message } => LlmError::Timeout {
            message: p(message),
        },
        LlmError::Connection { message } => LlmError::Connection {
            message: p(message),
        },
        LlmError::MalformedResponse { message } => LlmError::MalformedResponse {
            message: p(message),
        },
        LlmError::NotConfigured { message } => LlmError::NotConfigured {
            message: p(message),
        },
        LlmError::Other { message } => LlmError::Other {
            message: p(message),
        },
        // Cancelled carries no message, and a cancelled call is no failure
        // to explain.
        other => other,
    }
}

/// Retries the calls of an inner provider according to a [`RetryPolicy`].
///
/// A stream is retried only while it has delivered nothing (an error status,
/// a refused connection, a stream that ends or is cut before its first
/// chunk): once a chunk has reached the caller, the caller holds half an
/// answer that a new attempt would not continue, so an error ends the stream,
/// its message saying that it was not retried. Waits stop early, with
/// [`LlmError::Cancelled`], when the turn is cancelled.
///
/// The error returned after more than one attempt is the last attempt's, in
/// its own variant (so `error.type` names the last cause), with a message
/// that begins with the attempts made and why there was no other: `gave up
/// after 6 attempts (all 5 retries used); last: invalid completion JSON …`.
///
/// ```
/// use looopy_core::LlmProvider;
/// use looopy_loop::layers::retry::{RetryPolicy, RetryingLlm};
/// use looopy_testkit::ScriptedLlm;
///
/// let llm = RetryingLlm::new(ScriptedLlm::new(), RetryPolicy::default());
/// assert_eq!(llm.provider_name(), "scripted");
/// ```
#[derive(Debug, Clone)]
pub struct RetryingLlm<P> {
    inner: P,
    policy: RetryPolicy,
}

impl<P: LlmProvider> RetryingLlm<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, policy: RetryPolicy) -> Self {
        RetryingLlm { inner, policy }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Waits before retry `retry`, or gives the error back.
    async fn wait(&self, retry: u32, error: LlmError, cx: &TurnContext) -> Result<(), LlmError> {
        let delay = match self.policy.decide(retry, &error) {
            Ok(delay) => delay,
            Err(why) => return Err(why.annotate(retry + 1, &self.policy, error)),
        };
        tracing::warn!(
            retry = retry + 1,
            max_retries = self.policy.max_retries,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error.type = error.kind(),
            error = %error,
            "model call failed, retrying"
        );
        let started = (chrono::Utc::now(), std::time::Instant::now());
        let waited = tokio::select! {
            biased;
            _ = cx.cancel.cancelled() => Err(LlmError::Cancelled),
            _ = tokio::time::sleep(delay) => Ok(()),
        };
        if let Some(recorder) = &cx.recorder {
            let kind = StepKind::Retry {
                retry: retry + 1,
                delay,
                error: RecordedError::from(&error),
            };
            recorder.step(started.0, started.1.elapsed(), kind).await;
        }
        waited
    }
}

struct StreamState<'a, P> {
    llm: &'a RetryingLlm<P>,
    cx: &'a TurnContext,
    request: LlmRequest,
    inner: Option<LlmStream<'a>>,
    delivered: bool,
    retry: u32,
    done: bool,
}

#[async_trait]
impl<P: LlmProvider> LlmProvider for RetryingLlm<P> {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let mut retry = 0;
        loop {
            match self.inner.call(request.clone(), cx).await {
                Ok(response) => return Ok(response),
                Err(e) => self.wait(retry, e, cx).await?,
            }
            retry += 1;
        }
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        // Boxed: `unfold` moves its state into each chunk's future and
        // back out, and this one holds the request.
        let state = Box::new(StreamState {
            llm: self,
            cx,
            request,
            inner: None,
            delivered: false,
            retry: 0,
            done: false,
        });
        stream::unfold(state, |mut s| async move {
            let item = next_chunk(&mut s).await?;
            Some((item, s))
        })
        .boxed()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
}

async fn next_chunk<P: LlmProvider>(
    s: &mut StreamState<'_, P>,
) -> Option<Result<LlmChunk, LlmError>> {
    if s.done {
        return None;
    }
    loop {
        let llm = s.llm;
        let inner = s
            .inner
            .get_or_insert_with(|| llm.inner.stream(s.request.clone(), s.cx));
        match inner.next().await {
            Some(Ok(chunk)) => {
                s.delivered = true;
                return Some(Ok(chunk));
            }
            None => {
                s.done = true;
                return None;
            }
            Some(Err(e)) if !s.delivered => {
                // Drop the failed stream (and its connection) before waiting.
                s.inner = None;
                if let Err(e) = llm.wait(s.retry, e, s.cx).await {
                    s.done = true;
                    return Some(Err(e));
                }
                s.retry += 1;
            }
            Some(Err(e)) => {
                s.done = true;
                let why = match llm.policy.decide(s.retry, &e) {
                    Ok(_) => GiveUp::ChunksForwarded,
                    Err(why) => why,
                };
                return Some(Err(why.annotate(s.retry + 1, &llm.policy, e)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_capped_and_honours_retry_after() {
        let p = RetryPolicy::default();
        let server = LlmError::Server {
            retry_after: None,
            status: 503,
            message: String::new(),
        };
        for retry in 0..5 {
            let d = p.delay_for(retry, &server).unwrap();
            assert!(d <= Duration::from_secs(1 << retry).min(p.max_delay));
        }
        assert_eq!(p.delay_for(5, &server), None);
        let limited = |secs| LlmError::RateLimited {
            message: String::new(),
            retry_after: Some(Duration::from_secs(secs)),
        };
        assert_eq!(p.delay_for(0, &limited(3)), Some(Duration::from_secs(3)));
        assert_eq!(p.delay_for(0, &limited(3600)), None);
        assert!(!p.is_retryable(&LlmError::BadRequest {
            message: String::new()
        }));
        assert!(!p.is_retryable(&LlmError::Server {
            retry_after: None,
            status: 501,
            message: String::new()
        }));
        assert!(p.is_retryable(&LlmError::Connection {
            message: String::new()
        }));
        assert!(p.is_retryable(&LlmError::Overloaded {
            message: String::new(),
            retry_after: None,
        }));
        assert!(!p.is_retryable(&LlmError::ContextLengthExceeded {
            message: String::new()
        }));
        assert!(!p.is_retryable(&LlmError::Cancelled));
        assert!(p.is_retryable(&LlmError::MalformedResponse {
            message: String::new()
        }));
    }

    #[test]
    fn give_up_notes_keep_the_variant_and_name_the_attempts() {
        let p = RetryPolicy::default();
        let limited = LlmError::RateLimited {
            message: "later".into(),
            retry_after: Some(Duration::from_secs(3600)),
        };
        let why = p.decide(2, &limited).unwrap_err();
        assert_eq!(why, GiveUp::WaitTooLong(Duration::from_secs(3600)));
        assert_eq!(
            why.annotate(3, &p, limited.clone()),
            LlmError::RateLimited {
                message: "gave up after 3 attempts (the server asked to wait 3600s, \
                          more than the 60s cap); last: later"
                    .into(),
                retry_after: Some(Duration::from_secs(3600)),
            }
        );
        // A first attempt that was not retried stays as it was.
        assert_eq!(why.annotate(1, &p, limited.clone()), limited);
        let timeout = LlmError::Timeout {
            message: "idle".into(),
        };
        assert_eq!(
            GiveUp::NotRetryable.annotate(1, &p, timeout.clone()),
            timeout
        );
        assert_eq!(
            GiveUp::BudgetSpent.annotate(4, &p, LlmError::Cancelled),
            LlmError::Cancelled
        );
        let e = GiveUp::BudgetSpent.annotate(
            6,
            &p,
            LlmError::MalformedResponse {
                message: "the stream ended before [DONE]".into(),
            },
        );
        assert_eq!(e.kind(), "malformed_response");
        assert_eq!(
            e.to_string(),
            "malformed response: gave up after 6 attempts (all 5 retries used); \
             last: the stream ended before [DONE]"
        );
    }
}
