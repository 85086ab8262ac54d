//! [`TimeoutTools`]: a wrapper provider that bounds each call in time and
//! honours the turn's cancellation; [`TimeoutLayer`] is the [`ToolLayer`]
//! that puts it around a provider.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use looopy_core::{ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult, TurnContext};

use super::ToolLayer;

/// The limit a call gets when nothing else is configured.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// The time limits of tool calls: one for every tool, and overrides per
/// tool name. As a [`ToolLayer`] it wraps a provider in a [`TimeoutTools`]
/// with these limits.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeoutLayer {
    default: Option<Duration>,
    per_tool: HashMap<String, Option<Duration>>,
}

impl Default for TimeoutLayer {
    /// 30 s for every tool.
    fn default() -> Self {
        TimeoutLayer::new(DEFAULT_TOOL_TIMEOUT)
    }
}

impl TimeoutLayer {
    /// `limit` for every tool without its own.
    pub fn new(limit: Duration) -> Self {
        TimeoutLayer {
            default: Some(limit),
            per_tool: HashMap::new(),
        }
    }

    /// No limit for tools without their own (calls still stop on
    /// cancellation).
    pub fn unbounded() -> Self {
        TimeoutLayer {
            default: None,
            per_tool: HashMap::new(),
        }
    }

    /// Sets the limit of every tool without its own.
    pub fn with_default(mut self, limit: Duration) -> Self {
        self.default = Some(limit);
        self
    }

    /// Sets the limit of one tool.
    pub fn with_timeout(mut self, tool: impl Into<String>, limit: Duration) -> Self {
        self.per_tool.insert(tool.into(), Some(limit));
        self
    }

    /// Lets one tool run without a limit (it still stops on cancellation).
    pub fn without_timeout(mut self, tool: impl Into<String>) -> Self {
        self.per_tool.insert(tool.into(), None);
        self
    }

    /// The limit that applies to `tool`, `None` for none.
    pub fn limit_for(&self, tool: &str) -> Option<Duration> {
        match self.per_tool.get(tool) {
            Some(limit) => *limit,
            None => self.default,
        }
    }
}

impl ToolLayer for TimeoutLayer {
    fn layer(&self, inner: Arc<dyn ToolProvider>) -> Arc<dyn ToolProvider> {
        Arc::new(TimeoutTools {
            inner,
            limits: self.clone(),
        })
    }
}

/// Wraps a provider so that every call ends within its time limit (30 s
/// unless configured, per tool if need be) or when the turn is cancelled.
///
/// A call past its limit becomes a `ToolFailure::Timeout` result carrying
/// the [`ToolError::Timeout`] message, and the tool's future is dropped,
/// which stops whatever it was awaiting. A cancelled turn gives a
/// `ToolFailure::Cancelled` result with the [`ToolError::Cancelled`]
/// message. Listing is not bounded.
///
/// An [`AgentLoop`](crate::AgentLoop) puts one around each of its tool
/// providers by default (see
/// [`AgentLoopBuilder::tool_timeout`](crate::AgentLoopBuilder::tool_timeout)):
/// wrap a provider yourself only for a loop built without it.
#[derive(Debug, Clone)]
pub struct TimeoutTools<P> {
    inner: P,
    limits: TimeoutLayer,
}

impl<P> TimeoutTools<P> {
    /// Wraps `inner` with the default limit of 30 s.
    pub fn new(inner: P) -> Self {
        TimeoutTools {
            inner,
            limits: TimeoutLayer::default(),
        }
    }

    /// Wraps `inner` with `limits`.
    pub fn with_limits(inner: P, limits: TimeoutLayer) -> Self {
        TimeoutTools { inner, limits }
    }

    /// Sets the limit of every tool without its own.
    pub fn with_default(mut self, limit: Duration) -> Self {
        self.limits = self.limits.with_default(limit);
        self
    }

    /// Sets the limit of one tool.
    pub fn with_timeout(mut self, tool: impl Into<String>, limit: Duration) -> Self {
        self.limits = self.limits.with_timeout(tool, limit);
        self
    }

    /// Lets one tool run without a limit (it still stops on cancellation).
    pub fn without_timeout(mut self, tool: impl Into<String>) -> Self {
        self.limits = self.limits.without_timeout(tool);
        self
    }

    /// The limit that applies to `tool`, `None` for none.
    pub fn limit_for(&self, tool: &str) -> Option<Duration> {
        self.limits.limit_for(tool)
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Unwraps the provider.
    pub fn into_inner(self) -> P {
        self.inner
    }
}

#[async_trait]
impl<P: ToolProvider> ToolProvider for TimeoutTools<P> {
    async fn tools(&self, cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        self.inner.tools(cx).await
    }

    fn tools_are_fixed(&self) -> bool {
        self.inner.tools_are_fixed()
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        let run = self.inner.execute(call, cx);
        let limit = self.limit_for(&call.name);
        let timed = async {
            match limit {
                Some(limit) => tokio::time::timeout(limit, run).await.map_err(|_| limit),
                None => Ok(run.await),
            }
        };
        tokio::select! {
            biased;
            () = cx.cancel.cancelled() => {
                ToolResult::from_error(call.id.clone(), &ToolError::Cancelled)
            }
            outcome = timed => match outcome {
                Ok(result) => result,
                Err(limit) => {
                    tracing::warn!(tool = %call.name, ?limit, "tool call timed out");
                    let error = ToolError::Timeout {
                        tool: call.name.clone(),
                        after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                    };
                    ToolResult::from_error(call.id.clone(), &error)
                }
            },
        }
    }

    async fn start(&self) -> Result<(), ToolError> {
        self.inner.start().await
    }

    async fn shutdown(&self) -> Result<(), ToolError> {
        self.inner.shutdown().await
    }
}
