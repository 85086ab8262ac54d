//! The [`ToolProvider`] trait: a source of tools (Rust functions, client
//! tools, an MCP server, a remote agent).

use std::sync::Arc;

use async_trait::async_trait;

use crate::context::TurnContext;
use crate::tool::{ToolCall, ToolDefinition, ToolFailure, ToolResult};

/// Why a provider could not list or run its tools.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool of that name.
    #[error("Unknown tool '{name}'")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The arguments did not fit the tool's schema.
    #[error("invalid arguments for '{tool}': {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What was wrong, for the model to read.
        message: String,
    },
    /// The tool failed.
    #[error("{message}")]
    Execution {
        /// What went wrong.
        message: String,
    },
    /// The tool ran past its timeout.
    #[error("tool '{tool}' timed out after {after_ms} ms")]
    Timeout {
        /// The tool.
        tool: String,
        /// The limit.
        after_ms: u64,
    },
    /// The provider's backend (MCP server, remote agent) is unreachable.
    #[error("tool provider unavailable: {message}")]
    Unavailable {
        /// What failed.
        message: String,
    },
    /// Two providers offer the same tool name.
    #[error("duplicate tool name '{name}'")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// A tool asked its context for a dependency of a type nobody gave
    /// ([`Deps`](crate::Deps)).
    #[error(
        "missing dependency `{type_name}`: give it to the loop's or the Agent's builder \
         (`.dep(value)`) or to the turn (`TurnContext::with_dep`)"
    )]
    MissingDependency {
        /// The type asked for.
        type_name: &'static str,
    },
}

impl ToolError {
    /// The kind of failed result this error makes when a call fails with it
    /// (see [`ToolResult::from_error`]).
    pub fn failure(&self) -> ToolFailure {
        match self {
            ToolError::UnknownTool { .. } => ToolFailure::UnknownTool,
            ToolError::InvalidArguments { .. } => ToolFailure::BadArguments,
            ToolError::Timeout { .. } => ToolFailure::Timeout,
            ToolError::Cancelled => ToolFailure::Cancelled,
            ToolError::Execution { .. }
            | ToolError::MissingDependency { .. }
            | ToolError::Unavailable { .. }
            | ToolError::DuplicateName { .. } => ToolFailure::Failed,
        }
    }
}

impl ToolResult {
    /// The failed result of a call that ended with `error`: its message for
    /// the model, its [`ToolError::failure`] kind.
    pub fn from_error(tool_call_id: impl Into<String>, error: &ToolError) -> Self {
        ToolResult::failed(tool_call_id, error.failure(), error.to_string())
    }
}

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
