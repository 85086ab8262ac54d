//! [`A2aClientError`].

use crate::RpcError;

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum A2aClientError {
    /// The request could not be sent or the response not read.
    #[error("A2A transport error: {0}")]
    Transport(String),
    /// The server answered with an HTTP error status (401, 413, 5xx...).
    #[error("A2A server answered HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The response body.
        body: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("A2A error: {0}")]
    Rpc(RpcError),
    /// The response was not what the protocol says.
    #[error("invalid A2A response: {0}")]
    Decode(String),
    /// The call needs something the negotiated version lacks.
    #[error("not supported: {0}")]
    Unsupported(String),
}

impl A2aClientError {
    /// The JSON-RPC error code, when the server sent one.
    pub fn code(&self) -> Option<i32> {
        match self {
            A2aClientError::Rpc(e) => Some(e.code),
            _ => None,
        }
    }
}
