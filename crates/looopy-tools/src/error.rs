//! Errors of this crate: [`ToolFnError`] for tool functions, [`ToolsError`]
//! for setting providers up.

use std::fmt;

/// The error a local tool function returns; the model reads its message as
/// the error result.
///
/// Like `anyhow::Error`, any `std::error::Error` converts into it, so `?`
/// works inside a tool; [`ToolFnError::new`] makes one from a message. A tool
/// may also return any other error type that implements `Display`.
pub struct ToolFnError {
    message: String,
}

impl ToolFnError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolFnError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolFnError {
    fn from(error: E) -> Self {
        ToolFnError::new(error.to_string())
    }
}

impl fmt::Display for ToolFnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ToolFnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ToolFnError").field(&self.message).finish()
    }
}

/// Why a provider of this crate could not be set up or reached.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsError {
    /// A client's tool declaration could not be read.
    #[error(transparent)]
    InvalidClientTools(#[from] looopy_core::client_tool::InvalidClientTools),
    /// An MCP server could not be started or reached.
    #[error("MCP server '{server}' is unavailable: {message}")]
    McpUnavailable {
        /// The server's name.
        server: String,
        /// What failed.
        message: String,
    },
    /// The authorization server of an MCP server refused the client's
    /// OAuth credentials (a wrong secret, an unknown client, a scope it may
    /// not have): connecting again with the same credentials fails the same
    /// way.
    #[error(
        "MCP server '{server}': the authorization server refused the client credentials: {message}"
    )]
    McpAuthRefused {
        /// The server's name.
        server: String,
        /// The authorization server's answer.
        message: String,
    },
    /// An MCP server answered a request with an error (an unknown
    /// resource or prompt, a missing argument).
    #[error("MCP server '{server}' refused the request: {message}")]
    McpRequest {
        /// The server's name.
        server: String,
        /// The request and the server's message.
        message: String,
    },
    /// An MCP server configuration is invalid (bad header, empty command).
    #[error("invalid MCP server configuration: {0}")]
    McpConfig(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn std_errors_convert_with_their_message() {
        let parse: Result<i32, _> = "x".parse::<i32>();
        let e: ToolFnError = parse.unwrap_err().into();
        assert!(e.message().contains("invalid digit"), "{e}");
        assert_eq!(ToolFnError::new("boom").to_string(), "boom");
    }
}
