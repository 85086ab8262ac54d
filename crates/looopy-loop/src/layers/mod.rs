//! Cross-cutting behaviour as layers of one shape, after tower's `Layer`:
//! a layer takes a provider and returns a provider that wraps it.
//!
//! An [`AgentLoop`](crate::AgentLoop) stacks them one way when it is built
//! ([`AgentLoopBuilder::build`](crate::AgentLoopBuilder::build)):
//!
//! ```text
//! loop ─▶ llm_layer #1 ─▶ llm_layer #2 ─▶ … ─▶ retry ─────▶ model
//! loop ─▶ tool_layer #1 ─▶ tool_layer #2 ─▶ … ─▶ timeout ─▶ each tool provider
//! ```
//!
//! The layers added with [`llm_layer`](crate::AgentLoopBuilder::llm_layer)
//! and [`tool_layer`](crate::AgentLoopBuilder::tool_layer) wrap in the order
//! they were added, the first outermost (the first to see a call, the last to
//! see its answer), as with tower's `ServiceBuilder`. The default layers sit
//! innermost, next to the provider: [`RetryPolicy`]
//! around the model (a custom layer sees one call per model request, however
//! many attempts it took) and [`TimeoutLayer`] around
//! every tool provider (a custom layer sees a timed-out call as a `Timeout`
//! result). Each provider is wrapped once, at build time.
//!
//! [`RecordLayer`] is always there, innermost around the model (each attempt
//! is a step of the turn's execution record) and just outside the timeout
//! around each tool provider; it does nothing for a turn without a
//! recorder.
//!
//! [`FallbackLayer`] is added like any custom layer, outside the retry: the
//! next model is tried once the first has used its retries.
//!
//! A closure `Fn(Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider>` is an
//! [`LlmLayer`], and one over `Arc<dyn ToolProvider>` a [`ToolLayer`].

pub mod cache;
mod ext;
pub mod fallback;
pub mod record;
pub mod retry;
pub mod timeout;

use std::sync::Arc;

use looopy_core::{LlmProvider, ToolProvider};

pub use cache::{LlmCacheLayer, ToolCacheLayer};
pub use ext::ToolProviderExt;
pub use fallback::{FallbackLayer, FallbackLlm, falls_back_on};
pub use record::RecordLayer;
pub use retry::{RetryPolicy, RetryingLlm};
pub use timeout::{DEFAULT_TOOL_TIMEOUT, TimeoutLayer, TimeoutTools};

/// Wraps a model in another that adds some behaviour (retry, tracing...).
pub trait LlmLayer: Send + Sync {
    /// The model that callers will use instead of `inner`.
    fn layer(&self, inner: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider>;
}

/// Wraps a tool provider in another that adds some behaviour (timeouts,
/// caching, checks...).
pub trait ToolLayer: Send + Sync {
    /// The provider that callers will use instead of `inner`.
    fn layer(&self, inner: Arc<dyn ToolProvider>) -> Arc<dyn ToolProvider>;
}

impl<F> LlmLayer for F
where
    F: Fn(Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> + Send + Sync,
{
    fn layer(&self, inner: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        self(inner)
    }
}

impl<F> ToolLayer for F
where
    F: Fn(Arc<dyn ToolProvider>) -> Arc<dyn ToolProvider> + Send + Sync,
{
    fn layer(&self, inner: Arc<dyn ToolProvider>) -> Arc<dyn ToolProvider> {
        self(inner)
    }
}

/// The model layers of a loop, innermost (the default retry) first once
/// built.
#[derive(Clone, Default)]
pub(crate) struct LlmStack {
    /// Applied from the first to the last: the last is outermost.
    layers: Vec<Arc<dyn LlmLayer>>,
}

impl LlmStack {
    /// The stack: `retry` innermost, then `custom` from the last added to the
    /// first (which ends outermost).
    pub(crate) fn new(retry: Option<RetryPolicy>, custom: &[Arc<dyn LlmLayer>]) -> Self {
        let mut layers: Vec<Arc<dyn LlmLayer>> = Vec::with_capacity(custom.len() + 2);
        // Innermost: each attempt is a step of the execution record.
        layers.push(Arc::new(RecordLayer));
        if let Some(policy) = retry {
            layers.push(Arc::new(policy));
        }
        layers.extend(custom.iter().rev().cloned());
        LlmStack { layers }
    }

    /// `model` wrapped in every layer.
    pub(crate) fn apply(&self, model: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        self.layers.iter().fold(model, |m, l| l.layer(m))
    }
}

/// The tool layers of a loop, innermost (the default timeout) first.
pub(crate) struct ToolStack {
    layers: Vec<Arc<dyn ToolLayer>>,
}

impl ToolStack {
    /// The stack: `timeout` innermost, then `custom` from the last added to
    /// the first (which ends outermost).
    pub(crate) fn new(timeout: Option<TimeoutLayer>, custom: &[Arc<dyn ToolLayer>]) -> Self {
        let mut layers: Vec<Arc<dyn ToolLayer>> = Vec::with_capacity(custom.len() + 2);
        if let Some(timeout) = timeout {
            layers.push(Arc::new(timeout));
        }
        // Outside the timeout: a timed-out call is recorded with its failure.
        layers.push(Arc::new(RecordLayer));
        layers.extend(custom.iter().rev().cloned());
        ToolStack { layers }
    }

    /// `provider` wrapped in every layer.
    pub(crate) fn apply(&self, provider: Arc<dyn ToolProvider>) -> Arc<dyn ToolProvider> {
        self.layers.iter().fold(provider, |p, l| l.layer(p))
    }
}
