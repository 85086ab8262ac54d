//! [`ScriptedLlm`]: a model that answers from a script.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream;
use looopy_core::{
    LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, ResponseAssembler,
    TurnContext,
};

/// One answer of the script.
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "a script holds a few steps, built once per test; boxing the response would only cost every test a `Box::new`"
)]
pub enum ScriptStep {
    /// A complete response (streamed as the chunks it is made of).
    Respond(LlmResponse),
    /// These chunks, in order (a call assembles them into a response).
    Stream(Vec<LlmChunk>),
    /// These chunks, then this error (a stream cut in the middle).
    StreamThenFail(Vec<LlmChunk>, LlmError),
    /// An error.
    Fail(LlmError),
    /// Wait, then take the inner step. Cancellation of the turn interrupts the wait.
    Delay(Duration, Box<ScriptStep>),
}

#[derive(Default)]
struct State {
    steps: VecDeque<ScriptStep>,
    requests: Vec<LlmRequest>,
}

/// A model that answers from a script and records what it was asked.
///
/// Clones share the script and the record. When the script runs out, the
/// `fallback` step repeats if one was set, otherwise calls fail with
/// [`LlmError::Other`] saying so.
///
/// ```
/// use looopy_core::{LlmResponse, ToolCall};
/// use looopy_testkit::ScriptedLlm;
///
/// let llm = ScriptedLlm::new()
///     .respond(LlmResponse::tool_calls("", vec![ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#)]))
///     .respond(LlmResponse::text("3"));
/// assert_eq!(llm.remaining(), 2);
/// ```
#[derive(Clone, Default)]
pub struct ScriptedLlm {
    state: Arc<Mutex<State>>,
    fallback: Option<Arc<ScriptStep>>,
    record: bool,
}

impl ScriptedLlm {
    /// An empty script that records requests.
    pub fn new() -> Self {
        ScriptedLlm {
            record: true,
            ..Default::default()
        }
    }

    /// A model that answers every call with `step` and records nothing
    /// (for benchmarks and load tests).
    pub fn repeating(step: ScriptStep) -> Self {
        ScriptedLlm {
            state: Arc::default(),
            fallback: Some(Arc::new(step)),
            record: false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the script from the others.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a step.
    pub fn then(self, step: ScriptStep) -> Self {
        self.lock().steps.push_back(step);
        self
    }

    /// Adds a complete response.
    pub fn respond(self, response: LlmResponse) -> Self {
        self.then(ScriptStep::Respond(response))
    }

    /// Adds a streamed response.
    pub fn stream(self, chunks: Vec<LlmChunk>) -> Self {
        self.then(ScriptStep::Stream(chunks))
    }

    /// Adds an error.
    pub fn fail(self, error: LlmError) -> Self {
        self.then(ScriptStep::Fail(error))
    }

    /// Adds a response that arrives after `delay`.
    pub fn respond_after(self, delay: Duration, response: LlmResponse) -> Self {
        self.then(ScriptStep::Delay(
            delay,
            Box::new(ScriptStep::Respond(response)),
        ))
    }

    /// Repeats `step` once the script is exhausted.
    pub fn with_fallback(mut self, step: ScriptStep) -> Self {
        self.fallback = Some(Arc::new(step));
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.lock().requests.clone()
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// Steps not yet used.
    pub fn remaining(&self) -> usize {
        self.lock().steps.len()
    }

    fn next_step(&self, request: LlmRequest) -> ScriptStep {
        let mut state = self.lock();
        if self.record {
            state.requests.push(request);
        }
        match state.steps.pop_front() {
            Some(step) => step,
            None => match &self.fallback {
                Some(step) => (**step).clone(),
                None => ScriptStep::Fail(LlmError::Other {
                    message: "ScriptedLlm: the script is exhausted".into(),
                }),
            },
        }
    }
}

/// Waits out any delays (cancellably) and returns the step to play.
async fn settle(mut step: ScriptStep, cx: &TurnContext) -> ScriptStep {
    while let ScriptStep::Delay(d, inner) = step {
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = cx.cancel.cancelled() => return ScriptStep::Fail(LlmError::Cancelled),
        }
        step = *inner;
    }
    step
}

#[async_trait]
impl LlmProvider for ScriptedLlm {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let step = self.next_step(request);
        match settle(step, cx).await {
            ScriptStep::Respond(r) => Ok(r),
            ScriptStep::Stream(chunks) => {
                let mut a = ResponseAssembler::new();
                chunks.iter().for_each(|c| a.push(c));
                Ok(a.finish())
            }
            ScriptStep::StreamThenFail(_, e) | ScriptStep::Fail(e) => Err(e),
            ScriptStep::Delay(..) => unreachable!("settle removes delays"),
        }
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        let step = self.next_step(request);
        stream::once(async move { settle(step, cx).await })
            .flat_map(|step| {
                let items: Vec<Result<LlmChunk, LlmError>> = match step {
                    ScriptStep::Respond(r) => r.into_chunks().into_iter().map(Ok).collect(),
                    ScriptStep::Stream(chunks) => chunks.into_iter().map(Ok).collect(),
                    ScriptStep::StreamThenFail(chunks, e) => {
                        chunks.into_iter().map(Ok).chain([Err(e)]).collect()
                    }
                    ScriptStep::Fail(e) => vec![Err(e)],
                    ScriptStep::Delay(..) => Vec::new(),
                };
                stream::iter(items)
            })
            .boxed()
    }

    fn provider_name(&self) -> &str {
        "scripted"
    }

    fn model_name(&self) -> &str {
        "scripted"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn plays_the_script_in_order_and_records_requests() {
        let llm = ScriptedLlm::new()
            .respond(LlmResponse::text("one"))
            .fail(LlmError::Server {
                retry_after: None,
                status: 503,
                message: "down".into(),
            });
        let cx = TurnContext::new("t", "c");
        let r = llm.call(LlmRequest::default(), &cx).await.unwrap();
        assert_eq!(r.message.text(), "one");
        let e = llm.call(LlmRequest::default(), &cx).await.unwrap_err();
        assert_eq!(e.status(), Some(503));
        assert!(matches!(
            llm.call(LlmRequest::default(), &cx).await,
            Err(LlmError::Other { .. })
        ));
        assert_eq!(llm.request_count(), 3);
    }

    #[tokio::test]
    async fn delay_is_interrupted_by_cancellation() {
        let llm =
            ScriptedLlm::new().respond_after(Duration::from_secs(60), LlmResponse::text("late"));
        let cx = TurnContext::new("t", "c");
        cx.cancel.cancel();
        let e = llm.call(LlmRequest::default(), &cx).await.unwrap_err();
        assert_eq!(e, LlmError::Cancelled);
    }
}
