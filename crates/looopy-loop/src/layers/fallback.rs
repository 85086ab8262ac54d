//! [`FallbackLlm`]: when a model cannot answer (overloaded, a 5xx, a rate
//! limit that outlasted the retries, unreachable), the same request goes to
//! the next model of a list; [`FallbackLayer`] is the [`LlmLayer`] that puts
//! it there.
//!
//! The layer sits outside the retry layer: the primary model has used its
//! retry budget before the next model is tried, and each fallback model is
//! wrapped in the same [`RetryPolicy`] (see [`FallbackLayer::with_retry`]).

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{self, StreamExt};
use looopy_core::{
    LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, TurnContext,
};

use super::LlmLayer;
use super::retry::{RetryPolicy, prefix_message};

/// Puts a [`FallbackLlm`] around a model: the model first, then each of
/// `fallbacks` in order.
///
/// ```
/// use std::sync::Arc;
/// use looopy_core::LlmProvider;
/// use looopy_loop::layers::{FallbackLayer, LlmLayer, RetryPolicy};
/// use looopy_testkit::ScriptedLlm;
///
/// let backup: Arc<dyn LlmProvider> = Arc::new(ScriptedLlm::new());
/// let layer = FallbackLayer::new([backup]).with_retry(RetryPolicy::default());
/// let llm = layer.layer(Arc::new(ScriptedLlm::new()));
/// assert_eq!(llm.model_name(), "scripted");
/// ```
#[derive(Clone, Default)]
pub struct FallbackLayer {
    fallbacks: Vec<Arc<dyn LlmProvider>>,
    retry: Option<RetryPolicy>,
}

impl std::fmt::Debug for FallbackLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let models: Vec<&str> = self.fallbacks.iter().map(|m| m.model_name()).collect();
        f.debug_struct("FallbackLayer")
            .field("fallbacks", &models)
            .field("retry", &self.retry)
            .finish()
    }
}

impl FallbackLayer {
    /// The models to try, in order, after the one the layer wraps. Give
    /// them unwrapped: [`with_retry`](Self::with_retry) adds their retries.
    pub fn new(fallbacks: impl IntoIterator<Item = Arc<dyn LlmProvider>>) -> Self {
        FallbackLayer {
            fallbacks: fallbacks.into_iter().collect(),
            retry: None,
        }
    }

    /// Retries the calls of each fallback model with `policy` (the loop's
    /// retry layer only wraps the primary one).
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// The fallback models, unwrapped.
    pub fn fallbacks(&self) -> &[Arc<dyn LlmProvider>] {
        &self.fallbacks
    }
}

/// Wraps a model in a [`FallbackLlm`]; no fallback models leave it as it
/// is.
impl LlmLayer for FallbackLayer {
    fn layer(&self, inner: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        if self.fallbacks.is_empty() {
            return inner;
        }
        let fallbacks = self.fallbacks.iter().map(|m| match &self.retry {
            Some(policy) => policy.layer(m.clone()),
            None => m.clone(),
        });
        Arc::new(FallbackLlm::new(inner, fallbacks))
    }
}

/// Whether a failed call is worth sending to the next model: an overloaded
/// model, a server error (5xx), a rate limit (by the time this layer sees
/// it, it has outlasted the retry budget) or a connection that failed.
/// Never: authentication, a bad request, a context too long, a content
/// filter, a timeout, a malformed answer, a cancelled turn — the next model
/// would fail the same way, or the caller asked to stop.
pub fn falls_back_on(error: &LlmError) -> bool {
    match error {
        LlmError::Overloaded { .. } | LlmError::RateLimited { .. } => true,
        LlmError::Connection { .. } => true,
        LlmError::Server { status, .. } => *status >= 500,
        _ => false,
    }
}

/// Sends a call to the first of its models and, when that one fails in a
/// way [`falls_back_on`] accepts, to the next.
///
/// Each later model gets the same request with its model override cleared
/// (`request.model = None`), so that it answers with its own configured
/// model. A stream falls back only while it has delivered nothing: once a
/// chunk has reached the caller, an error ends the stream.
///
/// Every attempt that failed, and the answer of a model other than the
/// first, is an event on the current span (the loop's `chat` span):
/// `model attempt failed` / `fallback model answered`, with
/// `looopy.fallback.attempt` (1 for the first model), `gen_ai.provider.name`,
/// `gen_ai.request.model` and, for a failure, `error.type`.
///
/// When every model failed, the error is the last model's, in its own
/// variant, its message beginning with the models tried.
pub struct FallbackLlm {
    /// The first model, then the fallbacks; never empty.
    models: Vec<Arc<dyn LlmProvider>>,
}

impl std::fmt::Debug for FallbackLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let models: Vec<&str> = self.models.iter().map(|m| m.model_name()).collect();
        f.debug_struct("FallbackLlm")
            .field("models", &models)
            .finish()
    }
}

impl FallbackLlm {
    /// `primary` first, then `fallbacks` in order.
    pub fn new(
        primary: Arc<dyn LlmProvider>,
        fallbacks: impl IntoIterator<Item = Arc<dyn LlmProvider>>,
    ) -> Self {
        let mut models = vec![primary];
        models.extend(fallbacks);
        FallbackLlm { models }
    }

    /// The models, the first one first.
    pub fn models(&self) -> &[Arc<dyn LlmProvider>] {
        &self.models
    }

    /// The request for model `index`: a later model uses its own model.
    fn request_for(index: usize, request: &LlmRequest) -> LlmRequest {
        let mut request = request.clone();
        if index > 0 {
            request.model = None;
        }
        request
    }

    /// Records attempt `index`'s failure; gives back the error to return
    /// when there is no next model to try.
    async fn failed(
        &self,
        index: usize,
        error: LlmError,
        cx: &TurnContext,
    ) -> Result<(), LlmError> {
        let model = &self.models[index];
        let next = self.models.get(index + 1).filter(|_| falls_back_on(&error));
        tracing::warn!(
            looopy.fallback.attempt = index + 1,
            gen_ai.provider.name = %model.provider_name(),
            gen_ai.request.model = %model.model_name(),
            error.type = error.kind(),
            error = %error,
            looopy.fallback.next_model = next.map(|m| m.model_name()).unwrap_or(""),
            "model attempt failed"
        );
        if let Some(next) = next {
            if let Some(recorder) = &cx.recorder {
                let kind = looopy_core::record::StepKind::Fallback {
                    from: model.model_name().to_owned(),
                    to: next.model_name().to_owned(),
                    error: looopy_core::record::RecordedError::from(&error),
                };
                recorder.mark(kind).await;
            }
            return Ok(());
        }
        if index == 0 {
            return Err(error);
        }
        let tried: Vec<&str> = self.models[..=index]
            .iter()
            .map(|m| m.model_name())
            .collect();
        let why = if falls_back_on(&error) {
            "no model left"
        } else {
            "this error is not sent to another model"
        };
        let note = format!(
            "tried {} models ({}; {why}); last: ",
            index + 1,
            tried.join(", ")
        );
        Err(prefix_message(error, &note))
    }

    /// Records the answer of a fallback model.
    fn answered(&self, index: usize) {
        if index == 0 {
            return;
        }
        let model = &self.models[index];
        tracing::info!(
            looopy.fallback.attempt = index + 1,
            gen_ai.provider.name = %model.provider_name(),
            gen_ai.request.model = %model.model_name(),
            "fallback model answered"
        );
    }
}

struct StreamState<'a> {
    llm: &'a FallbackLlm,
    cx: &'a TurnContext,
    request: LlmRequest,
    index: usize,
    inner: Option<LlmStream<'a>>,
    delivered: bool,
    done: bool,
}

#[async_trait]
impl LlmProvider for FallbackLlm {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let mut index = 0;
        loop {
            let attempt = Self::request_for(index, &request);
            match self.models[index].call(attempt, cx).await {
                Ok(response) => {
                    self.answered(index);
                    return Ok(response);
                }
                Err(e) => self.failed(index, e, cx).await?,
            }
            index += 1;
        }
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        let state = Box::new(StreamState {
            llm: self,
            cx,
            request,
            index: 0,
            inner: None,
            delivered: false,
            done: false,
        });
        stream::unfold(state, |mut s| async move {
            let item = next_chunk(&mut s).await?;
            Some((item, s))
        })
        .boxed()
    }

    fn provider_name(&self) -> &str {
        self.models[0].provider_name()
    }

    fn model_name(&self) -> &str {
        self.models[0].model_name()
    }
}

async fn next_chunk(s: &mut StreamState<'_>) -> Option<Result<LlmChunk, LlmError>> {
    if s.done {
        return None;
    }
    loop {
        let llm = s.llm;
        let (index, cx) = (s.index, s.cx);
        let request = &s.request;
        let inner = s.inner.get_or_insert_with(|| {
            llm.models[index].stream(FallbackLlm::request_for(index, request), cx)
        });
        match inner.next().await {
            Some(Ok(chunk)) => {
                if !s.delivered {
                    s.delivered = true;
                    llm.answered(index);
                }
                return Some(Ok(chunk));
            }
            None => {
                s.done = true;
                return None;
            }
            Some(Err(e)) if !s.delivered => {
                s.inner = None;
                if let Err(e) = llm.failed(index, e, cx).await {
                    s.done = true;
                    return Some(Err(e));
                }
                s.index += 1;
            }
            Some(Err(e)) => {
                s.done = true;
                return Some(Err(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_another_model_could_avoid_fall_back() {
        let message = String::new;
        assert!(falls_back_on(&LlmError::Overloaded {
            message: message(),
            retry_after: None
        }));
        assert!(falls_back_on(&LlmError::RateLimited {
            message: message(),
            retry_after: None
        }));
        assert!(falls_back_on(&LlmError::Server {
            status: 502,
            message: message(),
            retry_after: None
        }));
        assert!(falls_back_on(&LlmError::Connection { message: message() }));
        assert!(!falls_back_on(&LlmError::Authentication {
            message: message()
        }));
        assert!(!falls_back_on(&LlmError::BadRequest { message: message() }));
        assert!(!falls_back_on(&LlmError::ContextLengthExceeded {
            message: message()
        }));
        assert!(!falls_back_on(&LlmError::Cancelled));
    }
}
