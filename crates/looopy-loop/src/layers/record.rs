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
use looopy_core::record::{ModelCall, Recorder};
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

/// A model whose attempts are recorded.
struct RecordingLlm {
    inner: Arc<dyn LlmProvider>,
}

impl RecordingLlm {
    async fn record(
        &self,
        recorder: &Recorder,
        started: (chrono::DateTime<Utc>, Instant),
        request: &LlmRequest,
        streamed: bool,
        result: Result<&LlmResponse, &LlmError>,
    ) {
        recorder
            .model_call(
                started.0,
                started.1.elapsed(),
                ModelCall {
                    provider: self.inner.provider_name(),
                    model: self.inner.model_name(),
                    streamed,
                    request,
                    result: Some(result),
                },
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
        let started = (Utc::now(), Instant::now());
        let result = self.inner.call(request.clone(), cx).await;
        self.record(recorder, started, &request, false, result.as_ref())
            .await;
        result
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        let Some(recorder) = cx.recorder.clone() else {
            return self.inner.stream(request, cx);
        };
        let state = Box::new(StreamRecord {
            llm: self,
            inner: self.inner.stream(request.clone(), cx),
            request,
            recorder,
            started: (Utc::now(), Instant::now()),
            assembler: ResponseAssembler::new(),
            done: false,
        });
        stream::unfold(state, |mut s| async move {
            if s.done {
                return None;
            }
            match s.inner.next().await {
                Some(Ok(chunk)) => {
                    s.assembler.push(&chunk);
                    Some((Ok(chunk), s))
                }
                Some(Err(e)) => {
                    s.done = true;
                    s.llm
                        .record(&s.recorder, s.started, &s.request, true, Err(&e))
                        .await;
                    Some((Err(e), s))
                }
                None => {
                    s.done = true;
                    let assembler = std::mem::take(&mut s.assembler);
                    let response = assembler.finish();
                    s.llm
                        .record(&s.recorder, s.started, &s.request, true, Ok(&response))
                        .await;
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
    request: LlmRequest,
    recorder: Recorder,
    started: (chrono::DateTime<Utc>, Instant),
    assembler: ResponseAssembler,
    done: bool,
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
