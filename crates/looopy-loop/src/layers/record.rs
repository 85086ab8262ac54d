//! [`RecordLayer`]: writes each model attempt and each tool call to the
//! turn's execution record ([`TurnContext::recorder`]); a turn without a
//! recorder passes through untouched.
//!
//! A loop puts it on every model, inside the retry (each attempt is a step,
//! the retry's decisions steps between them), and on every tool provider,
//! outside the timeout (a timed-out call is a step with its failure).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use chrono::Utc;
use futures::stream::{self, StreamExt};
use looopy_core::ResponseAssembler;
use looopy_core::record::{Attempt, Recorder};
use looopy_core::{
    LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, ToolCall, ToolDefinition, ToolError,
    ToolProvider, ToolResult, TurnContext,
};

use super::{LlmLayer, ToolLayer};

/// Records model attempts and tool calls: the [`LlmLayer`] and the
/// [`ToolLayer`] of the execution record.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordLayer;

impl LlmLayer for RecordLayer {
    fn layer(&self, inner: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        Arc::new(RecordingLlm { inner })
    }
}

impl ToolLayer for RecordLayer {
    fn layer(&self, inner: Arc<dyn ToolProvider>) -> Arc<dyn ToolProvider> {
        Arc::new(RecordingTools { inner })
    }
}

/// A model whose attempts are recorded. The request is taken for the
/// record before it is sent, so that it moves on to the model uncopied.
struct RecordingLlm {
    inner: Arc<dyn LlmProvider>,
}

impl RecordingLlm {
    async fn record(
        &self,
        recorder: &Recorder,
        started: (chrono::DateTime<Utc>, Instant),
        attempt: Attempt,
        result: Result<&LlmResponse, &LlmError>,
    ) {
        recorder
            .attempt_ended(
                started.0,
                started.1.elapsed(),
                (self.inner.provider_name(), self.inner.model_name()),
                attempt,
                Some(result),
            )
            .await;
    }
}

#[async_trait]
impl LlmProvider for RecordingLlm {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let Some(recorder) = &cx.recorder else {
            return self.inner.call(request, cx).await;
        };
        let attempt = recorder.attempt(&request, false);
        let started = (Utc::now(), Instant::now());
        let result = self.inner.call(request, cx).await;
        self.record(recorder, started, attempt, result.as_ref())
            .await;
        result
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        let Some(recorder) = cx.recorder.clone() else {
            return self.inner.stream(request, cx);
        };
        let attempt = Some(recorder.attempt(&request, true));
        let state = Box::new(StreamRecord {
            llm: self,
            started: (Utc::now(), Instant::now()),
            inner: self.inner.stream(request, cx),
            attempt,
            recorder,
            assembler: ResponseAssembler::new(),
        });
        stream::unfold(state, |mut s| async move {
            // Taken once the attempt is recorded: the stream has ended.
            s.attempt.as_ref()?;
            match s.inner.next().await {
                Some(Ok(chunk)) => {
                    s.assembler.push(&chunk);
                    Some((Ok(chunk), s))
                }
                Some(Err(e)) => {
                    if let Some(attempt) = s.attempt.take() {
                        s.llm.record(&s.recorder, s.started, attempt, Err(&e)).await;
                    }
                    Some((Err(e), s))
                }
                None => {
                    let response = std::mem::take(&mut s.assembler).finish();
                    if let Some(attempt) = s.attempt.take() {
                        s.llm
                            .record(&s.recorder, s.started, attempt, Ok(&response))
                            .await;
                    }
                    None
                }
            }
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

struct StreamRecord<'a> {
    llm: &'a RecordingLlm,
    inner: LlmStream<'a>,
    /// The attempt's request; `None` once the attempt is recorded.
    attempt: Option<Attempt>,
    recorder: Recorder,
    started: (chrono::DateTime<Utc>, Instant),
    assembler: ResponseAssembler,
}

/// A tool provider whose calls are recorded.
struct RecordingTools {
    inner: Arc<dyn ToolProvider>,
}

#[async_trait]
impl ToolProvider for RecordingTools {
    async fn tools(&self, cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        self.inner.tools(cx).await
    }

    fn tools_are_fixed(&self) -> bool {
        self.inner.tools_are_fixed()
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        let Some(recorder) = &cx.recorder else {
            return self.inner.execute(call, cx).await;
        };
        let started = Utc::now();
        let clock = Instant::now();
        let result = self.inner.execute(call, cx).await;
        recorder
            .tool_call(started, clock.elapsed(), call, &result)
            .await;
        result
    }

    async fn start(&self) -> Result<(), ToolError> {
        self.inner.start().await
    }

    async fn shutdown(&self) -> Result<(), ToolError> {
        self.inner.shutdown().await
    }
}
