//! [`OpenError`]: why a session could not be opened, whatever its
//! transport.

use std::fmt;

/// Why a session could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// The server could not be started, reached or spoken to.
    Unavailable(String),
    /// The server's authorization server refused the client's credentials
    /// (the authorization server's own message).
    #[cfg_attr(not(feature = "mcp-oauth"), allow(dead_code))]
    Refused(String),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Unavailable(message) => f.write_str(message),
            OpenError::Refused(message) => write!(
                f,
                "the authorization server refused the client credentials: {message}"
            ),
        }
    }
}

impl From<String> for OpenError {
    fn from(message: String) -> Self {
        OpenError::Unavailable(message)
    }
}
