//! The [`ToolProvider`] trait: a source of tools (Rust functions, client
//! tools, an MCP server, a remote agent).

use std::sync::Arc;

use async_trait::async_trait;

use crate::context::TurnContext;
use crate::tool::{ToolCall, ToolDefinition, ToolError, ToolResult};

/// Providers print as a placeholder, so that the structs holding one
/// (the loop's `TurnInput::tools`, the Agent's `TurnOptions::tools`) derive
/// `Debug`.
impl std::fmt::Debug for dyn ToolProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<tool provider>")
    }
}

/// A source of tools.
///
/// `execute` never fails: a failure is a [`ToolResult`] with `is_error`, which
/// the model reads and may react to.
#[async_trait]
pub trait ToolProvider: Send + Sync {
    /// The tools this provider offers now.
    async fn tools(&self, cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError>;

    /// Runs one call of one of this provider's tools.
    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult;

    /// Whether [`tools`](Self::tools) gives the same list for every turn:
    /// it reads nothing of the turn's context and its tools never change
    /// (Rust functions, for instance; not an MCP server, whose tools may
    /// change, nor tools a client declares per turn). A loop whose
    /// providers all say so lists them once, at its first turn, and keeps
    /// that list for every turn after (a turn's own extra tools are still
    /// listed per turn). Default: false (listed at every turn). Providers
    /// that wrap another pass it on.
    fn tools_are_fixed(&self) -> bool {
        false
    }

    /// Starts what the provider needs before its first call (an MCP
    /// server's child process and handshake), so that a server that is
    /// slow or broken shows when the Agent starts rather than in its first
    /// turn. The Agent's start calls it (`AgentLoop::start_tools`); a
    /// provider started more than once, or used without being started,
    /// must work all the same. The default does nothing; providers that
    /// wrap another must pass it on.
    async fn start(&self) -> Result<(), ToolError> {
        Ok(())
    }

    /// Releases what the provider holds (child processes, sessions,
    /// connections), for a clean stop: `Agent::shutdown` and a server's
    /// graceful stop call it. A provider shared by several agents may be
    /// shut down more than once, and used again afterwards: it then starts
    /// what it needs anew. The default holds nothing and does nothing;
    /// providers that wrap another must pass it on.
    async fn shutdown(&self) -> Result<(), ToolError> {
        Ok(())
    }
}

#[async_trait]
impl<P: ToolProvider + ?Sized> ToolProvider for Arc<P> {
    async fn tools(&self, cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        (**self).tools(cx).await
    }
    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        (**self).execute(call, cx).await
    }
    fn tools_are_fixed(&self) -> bool {
        (**self).tools_are_fixed()
    }
    async fn start(&self) -> Result<(), ToolError> {
        (**self).start().await
    }
    async fn shutdown(&self) -> Result<(), ToolError> {
        (**self).shutdown().await
    }
}
