//! [`PermissionTools`]: a wrapper provider that asks a hook before each call
//! (seed 003 `canExecuteTool`, seed 002 `approve:tool`).

use std::future::Future;

use async_trait::async_trait;
use looopy_core::{ToolCall, ToolContext, ToolDefinition, ToolError, ToolProvider, ToolResult};
use serde_json::Value;

/// What a [`PermissionHook`] decides about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Permission {
    /// Run the call as the model asked.
    Allow,
    /// Do not run it; the model reads the reason as the error result.
    Deny(String),
    /// Run it with these arguments instead (normally a JSON object).
    Rewrite(Value),
}

impl Permission {
    /// A denial with this reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Permission::Deny(reason.into())
    }
}

/// Decides whether a call may run, before it runs.
///
/// Any `Fn(ToolCall, ToolContext) -> impl Future<Output = Permission>` is a
/// hook; so is [`SyncHook`] around a plain function.
#[async_trait]
pub trait PermissionHook: Send + Sync {
    /// Looks at one call.
    async fn check(&self, call: &ToolCall, cx: &ToolContext) -> Permission;
}

#[async_trait]
impl<F, Fut> PermissionHook for F
where
    F: Fn(ToolCall, ToolContext) -> Fut + Send + Sync,
    Fut: Future<Output = Permission> + Send,
{
    async fn check(&self, call: &ToolCall, cx: &ToolContext) -> Permission {
        self(call.clone(), cx.clone()).await
    }
}

/// A hook from a synchronous function of the call and its context.
#[derive(Debug, Clone, Copy)]
pub struct SyncHook<F>(pub F);

#[async_trait]
impl<F> PermissionHook for SyncHook<F>
where
    F: Fn(&ToolCall, &ToolContext) -> Permission + Send + Sync,
{
    async fn check(&self, call: &ToolCall, cx: &ToolContext) -> Permission {
        (self.0)(call, cx)
    }
}

/// Wraps a provider so that a [`PermissionHook`] sees every call first and
/// may allow it, deny it (the reason becomes the error result, and the
/// result's metadata gets `"permission": "denied"`) or rewrite its arguments.
/// Listing is passed through unchanged.
#[derive(Debug, Clone)]
pub struct PermissionTools<P, H> {
    inner: P,
    hook: H,
}

impl<P, H> PermissionTools<P, H> {
    /// Wraps `inner`, asking `hook` before each call.
    pub fn new(inner: P, hook: H) -> Self {
        PermissionTools { inner, hook }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

#[async_trait]
impl<P: ToolProvider, H: PermissionHook> ToolProvider for PermissionTools<P, H> {
    async fn tools(&self, cx: &ToolContext) -> Result<Vec<ToolDefinition>, ToolError> {
        self.inner.tools(cx).await
    }

    async fn execute(&self, call: &ToolCall, cx: &ToolContext) -> ToolResult {
        match self.hook.check(call, cx).await {
            Permission::Allow => self.inner.execute(call, cx).await,
            Permission::Deny(reason) => {
                tracing::info!(tool = %call.name, %reason, "tool call denied");
                let reason = if reason.trim().is_empty() {
                    format!("permission denied for tool '{}'", call.name)
                } else {
                    reason
                };
                let mut result = ToolResult::error(call.id.clone(), reason);
                result
                    .metadata
                    .insert("permission".into(), Value::from("denied"));
                result
            }
            Permission::Rewrite(arguments) => {
                let mut rewritten = call.clone();
                rewritten.arguments = arguments.to_string();
                self.inner.execute(&rewritten, cx).await
            }
        }
    }
}
