//! One model call of an iteration: build the request, stream the answer,
//! forward text chunks, assemble the response.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use looopy_core::{
    ChatSpan, EventSink, History, LlmChunk, LlmError, LlmRequest, LlmResponse, LlmStream,
    ResponseAssembler, ToolChoice, ToolDefinition, TurnContext, WhenCancelled,
};
use tracing::Instrument;

use crate::config::AgentLoopConfig;
use crate::events::Emitter;
use crate::parts::LoopParts;

/// Builds the request of one call. The system prompt travels beside the
/// history; it is never stored in it.
pub(crate) fn request(
    config: &AgentLoopConfig,
    messages: History,
    tools: Arc<[ToolDefinition]>,
    tool_choice: Option<ToolChoice>,
) -> LlmRequest {
    LlmRequest {
        system_prompt: config.system_prompt.clone(),
        messages,
        tools,
        tool_choice,
        model: None,
        temperature: config.temperature,
        max_tokens: config.max_tokens,
        ..LlmRequest::default()
    }
}

/// The model's answer to one request, asked for but not yet read.
enum Answer<'a> {
    /// Whole (`LlmProvider::call`).
    Whole(BoxFuture<'a, Result<LlmResponse, LlmError>>),
    /// In chunks (`LlmProvider::stream`).
    Streamed(LlmStream<'a>),
}

/// Calls the model once. When streaming, text arrives as `artifact-update`
/// chunks on `artifact_id`, one chunk behind so that the last one can say so.
///
/// A plain function returning an `async move` block rather than an
/// `async fn`, and the request handed to the model before the wait: a
/// future keeps room for each value it captures for as long as it lives,
/// and an `async fn` keeps its arguments twice: written as one, it holds the
/// request three times, in a future that every iteration's
/// and the turn's (boxed, moved whole) contain.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn stores its arguments twice"
)]
pub(crate) fn call_model<'a>(
    parts: &'a LoopParts,
    config: &'a AgentLoopConfig,
    request: LlmRequest,
    cx: &'a TurnContext,
    emit: &'a Emitter,
    iteration: u32,
    artifact_id: &'a str,
) -> impl Future<Output = Result<LlmResponse, LlmError>> + Send + 'a {
    async move {
        let (llm, metrics) = (parts.llm.as_ref(), &parts.metrics);
        emit.llm_call(iteration, request.messages.len(), request.tools.len());
        let started = Instant::now();
        let model = request
            .model
            .clone()
            .unwrap_or_else(|| llm.model_name().to_owned());
        let chat = ChatSpan::new(llm.provider_name(), &model);
        let span = chat.span();
        span.record("looopy.iteration", iteration);
        chat.input(&request);
        // Layers around the model (a cache) may add internal events to the turn.
        let forward = emit.clone();
        let cx = &cx
            .clone()
            .with_events(EventSink::new(move |payload| forward.forward(payload)));
        // Asked for here (nothing runs before the first poll), so that
        // `work` holds the answer's future rather than the request.
        let answer = if config.stream {
            Answer::Streamed(llm.stream(request, cx))
        } else {
            Answer::Whole(llm.call(request, cx))
        };
        let work = async {
            let mut chunks = match answer {
                Answer::Streamed(chunks) => chunks,
                Answer::Whole(call) => {
                    let response = call.await?;
                    let text = response.message.text();
                    if !text.is_empty() {
                        emit.text_chunk(artifact_id, text, true, true);
                    }
                    return Ok(response);
                }
            };
            let mut assembler = ResponseAssembler::new();
            let mut held: Option<String> = None;
            let mut first = true;
            // (id, name) of each streamed tool call by index, so that every
            // argument delta can say which call it belongs to.
            let mut calls: Vec<(String, String)> = Vec::new();
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk?;
                assembler.push(&chunk);
                // A text delta is held by value (the assembler has its copy).
                if let LlmChunk::TextDelta(delta) = chunk {
                    if let Some(previous) = held.replace(delta) {
                        emit.text_chunk(artifact_id, previous, first, false);
                        first = false;
                    }
                    continue;
                }
                match &chunk {
                    LlmChunk::ToolCallStart { index, id, name } => {
                        if calls.len() <= *index {
                            calls.resize(*index + 1, Default::default());
                        }
                        // As the assembler does: a later start of the same call
                        // may complete its id or the rest of its name.
                        let known = &mut calls[*index];
                        let begins = known.0.is_empty() && known.1.is_empty();
                        if !id.is_empty() {
                            known.0.clone_from(id);
                        }
                        known.1.push_str(name);
                        if begins {
                            emit.tool_call_begin(iteration, *index, id, name);
                        }
                    }
                    LlmChunk::ToolCallDelta { index, arguments } if !arguments.is_empty() => {
                        emit.tool_call_delta(iteration, *index, calls.get(*index), arguments);
                    }
                    _ => {}
                }
            }
            if let Some(last) = held {
                emit.text_chunk(artifact_id, last, first, true);
            }
            let response = assembler.finish();
            // Every streamed call's arguments are complete: before any runs.
            emit.tool_calls_done(iteration, &calls, &response.message.tool_calls);
            Ok(response)
        }
        .instrument(span.clone());
        let result = tokio::select! {
            biased;
            // Polled again with every chunk: the cheap wait.
            () = WhenCancelled::new(&cx.cancel) => Err(LlmError::Cancelled),
            r = work => r,
        };
        let elapsed = started.elapsed();
        match &result {
            Ok(response) => {
                chat.success(
                    response.finish_reason.as_str(),
                    response.usage,
                    response.model.as_deref(),
                );
                chat.output(response);
                emit.llm_response(
                    iteration,
                    response.finish_reason.clone(),
                    response.message.tool_calls.len(),
                    response.usage,
                    elapsed.as_millis() as u64,
                );
            }
            Err(e) => {
                chat.error(e);
                if !matches!(e, LlmError::Cancelled) {
                    tracing::error!(parent: span, error = %e, "LLM call failed");
                }
            }
        }
        metrics.record_call(&model, llm.provider_name(), elapsed, &result);
        result
    }
}
