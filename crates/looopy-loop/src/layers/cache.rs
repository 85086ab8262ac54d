//! Response caches as layers: [`LlmCacheLayer`] answers a model request
//! seen before with the answer stored then, [`ToolCacheLayer`] a call of a
//! tool declared cacheable with the result stored then. Both are off unless
//! added, and keep entries in a [`CacheStore`] (memory, Redis) for a
//! time-to-live.
//!
//! A hit is visible in the traces: `looopy.cache.hit = true` on the `chat`
//! span of the model call or the `execute_tool` span of the tool call, and
//! a `cache hit` event in it; and in the turn's events: an
//! `internal:cache-hit` event (`EventPayload::CacheHit`, with the tool
//! call's id for a tool hit).
//!
//! Keys are a hash of a canonical JSON form of what decides the answer; the
//! stored entry keeps that form too and a hit must match it exactly, so that
//! a hash collision is a miss, never another request's answer.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    CacheKind, CacheStore, EventPayload, LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse,
    LlmStream, ResponseAssembler, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
use serde_json::{Value, json};

use super::{LlmLayer, ToolLayer};

/// Caches model answers by request: model, system prompt, messages (role,
/// content, tool calls, tool call ids: not message ids or metadata), tools,
/// tool choice and every option. Only complete answers are stored (a failed
/// or cut stream is not). A hit streams the stored answer as chunks.
#[derive(Clone)]
pub struct LlmCacheLayer {
    store: Arc<dyn CacheStore>,
    ttl: Duration,
}

impl LlmCacheLayer {
    /// A cache in `store` whose entries live for `ttl`.
    pub fn new(store: Arc<dyn CacheStore>, ttl: Duration) -> Self {
        LlmCacheLayer { store, ttl }
    }
}

impl LlmLayer for LlmCacheLayer {
    fn layer(&self, inner: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        Arc::new(CachedLlm {
            inner,
            cache: self.clone(),
        })
    }
}

struct CachedLlm {
    inner: Arc<dyn LlmProvider>,
    cache: LlmCacheLayer,
}

/// The key and the canonical form of a request.
fn request_key(default_model: &str, request: &LlmRequest) -> (String, String) {
    // Every field, by name: a field added to the request must be added here.
    let LlmRequest {
        system_prompt,
        messages,
        // Where the turn begins does not change what the model is asked.
        keep_from: _,
        tools,
        tool_choice,
        model,
        temperature,
        max_tokens,
        max_completion_tokens,
        parallel_tool_calls,
        response_format,
        metadata,
    } = request;
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({"role": m.role, "parts": m.parts, "toolCalls": m.tool_calls,
                   "toolCallId": m.tool_call_id})
        })
        .collect();
    let canonical = json!({
        "model": model.as_deref().unwrap_or(default_model),
        "system": system_prompt.as_deref(),
        "messages": messages,
        "tools": &**tools,
        "toolChoice": tool_choice,
        "temperature": temperature,
        "maxTokens": max_tokens,
        "maxCompletionTokens": max_completion_tokens,
        "parallelToolCalls": parallel_tool_calls,
        "responseFormat": response_format,
        "metadata": metadata,
    })
    .to_string();
    (key("llm", &canonical), canonical)
}

/// `looopy:cache:<kind>:<hash>` of a canonical form.
fn key(kind: &str, canonical: &str) -> String {
    // SipHash with fixed keys: the same in every process of one build. A
    // hash that changes between builds only costs misses.
    let mut h = std::hash::DefaultHasher::new();
    canonical.hash(&mut h);
    format!(
        "looopy:cache:{kind}:{:016x}{:08x}",
        h.finish(),
        canonical.len()
    )
}

/// The stored value under `key` whose canonical form is `canonical`.
async fn lookup(store: &dyn CacheStore, key: &str, canonical: &str) -> Option<Value> {
    match store.get(key).await {
        Ok(Some(mut entry)) if entry["request"].as_str() == Some(canonical) => {
            Some(entry["value"].take())
        }
        Ok(_) => None,
        Err(error) => {
            tracing::warn!(%error, "cache read failed; calling through");
            None
        }
    }
}

async fn store(
    store: &dyn CacheStore,
    key: &str,
    canonical: &str,
    value: Result<Value, serde_json::Error>,
    ttl: Duration,
) {
    let Ok(value) = value else { return };
    let entry = json!({"request": canonical, "value": value});
    if let Err(error) = store.put(key, &entry, ttl).await {
        tracing::warn!(%error, "cache write failed");
    }
}

/// Marks the current span (`chat` or `execute_tool`) as answered from the
/// cache, and tells the turn (through `cx.events`, which the loop sets for
/// model and tool calls).
fn record_hit(kind: CacheKind, cx: &TurnContext) {
    let name = match kind {
        CacheKind::Llm => "llm",
        CacheKind::Tool => "tool",
    };
    tracing::Span::current().record("looopy.cache.hit", true);
    tracing::info!(cache = name, "cache hit");
    if let Some(events) = &cx.events {
        let call_id = match kind {
            CacheKind::Tool => cx.call_id.as_deref().map(str::to_owned),
            CacheKind::Llm => None,
        };
        events.emit(EventPayload::CacheHit {
            cache: kind,
            call_id,
        });
    }
}

impl CachedLlm {
    async fn cached(&self, key: &str, canonical: &str) -> Option<LlmResponse> {
        let value = lookup(&*self.cache.store, key, canonical).await?;
        serde_json::from_value(value).ok()
    }
}

#[async_trait]
impl LlmProvider for CachedLlm {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let (key, canonical) = request_key(self.inner.model_name(), &request);
        if let Some(response) = self.cached(&key, &canonical).await {
            record_hit(CacheKind::Llm, cx);
            return Ok(response);
        }
        let response = self.inner.call(request, cx).await?;
        store(
            &*self.cache.store,
            &key,
            &canonical,
            serde_json::to_value(&response),
            self.cache.ttl,
        )
        .await;
        Ok(response)
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        let (key, canonical) = request_key(self.inner.model_name(), &request);
        futures::stream::once(async move {
            if let Some(response) = self.cached(&key, &canonical).await {
                record_hit(CacheKind::Llm, cx);
                return futures::stream::iter(response.into_chunks().into_iter().map(Ok)).boxed();
            }
            // Chunks pass through as they come; the answer is stored once
            // the stream ended whole.
            let assembler = Arc::new(Mutex::new(Some(ResponseAssembler::new())));
            let seen = assembler.clone();
            let chunks = self.inner.stream(request, cx).inspect(move |chunk| {
                let mut guard = seen.lock().unwrap_or_else(PoisonError::into_inner);
                match chunk {
                    Ok(c) => {
                        if let Some(a) = guard.as_mut() {
                            a.push(c);
                        }
                    }
                    Err(_) => *guard = None,
                }
            });
            let tail = futures::stream::once(async move {
                let done = assembler
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if let Some(a) = done.filter(ResponseAssembler::is_finished) {
                    let response = a.finish();
                    store(
                        &*self.cache.store,
                        &key,
                        &canonical,
                        serde_json::to_value(&response),
                        self.cache.ttl,
                    )
                    .await;
                }
            })
            .filter_map(|()| async { None::<Result<LlmChunk, LlmError>> });
            chunks.chain(tail).boxed()
        })
        .flatten()
        .boxed()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
}

/// Caches the results of the tools named with [`tool`](Self::tool) by tool,
/// arguments and principal (a result made for one user is never another
/// user's). Only successful results without a signal are stored; a hit is
/// the stored result with the new call's id.
#[derive(Clone)]
pub struct ToolCacheLayer {
    store: Arc<dyn CacheStore>,
    ttl: Duration,
    tools: Arc<HashSet<String>>,
}

impl ToolCacheLayer {
    /// A cache in `store` whose entries live for `ttl`, for no tool yet.
    pub fn new(store: Arc<dyn CacheStore>, ttl: Duration) -> Self {
        ToolCacheLayer {
            store,
            ttl,
            tools: Arc::default(),
        }
    }

    /// Declares the tool `name` cacheable: the same arguments give the same
    /// result for as long as the time-to-live.
    pub fn tool(mut self, name: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.tools).insert(name.into());
        self
    }
}

impl ToolLayer for ToolCacheLayer {
    fn layer(&self, inner: Arc<dyn ToolProvider>) -> Arc<dyn ToolProvider> {
        Arc::new(CachedTools {
            inner,
            cache: self.clone(),
        })
    }
}

struct CachedTools {
    inner: Arc<dyn ToolProvider>,
    cache: ToolCacheLayer,
}

#[async_trait]
impl ToolProvider for CachedTools {
    async fn tools(&self, cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        self.inner.tools(cx).await
    }

    fn tools_are_fixed(&self) -> bool {
        self.inner.tools_are_fixed()
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        if !self.cache.tools.contains(&call.name) {
            return self.inner.execute(call, cx).await;
        }
        let principal = cx.auth.as_ref().map(|a| a.principal.as_str());
        let canonical = json!({"tool": call.name, "arguments": call.parsed_arguments(),
                               "principal": principal})
        .to_string();
        let key = key("tool", &canonical);
        let store_ref = &*self.cache.store;
        if let Some(value) = lookup(store_ref, &key, &canonical).await
            && let Ok(mut result) = serde_json::from_value::<ToolResult>(value)
        {
            record_hit(CacheKind::Tool, cx);
            result.tool_call_id.clone_from(&call.id);
            return result;
        }
        let result = self.inner.execute(call, cx).await;
        if !result.is_error && result.failure.is_none() && result.signal.is_none() {
            store(
                store_ref,
                &key,
                &canonical,
                serde_json::to_value(&result),
                self.cache.ttl,
            )
            .await;
        }
        result
    }

    async fn start(&self) -> Result<(), ToolError> {
        self.inner.start().await
    }

    async fn shutdown(&self) -> Result<(), ToolError> {
        self.inner.shutdown().await
    }
}
