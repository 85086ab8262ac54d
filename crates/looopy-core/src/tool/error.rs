//! [`ToolError`]: why a tool provider could not list or run its tools, and
//! the kind of failed result it makes.

use super::ToolFailure;

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
    /// (see [`ToolResult::from_error`](crate::ToolResult::from_error)).
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
