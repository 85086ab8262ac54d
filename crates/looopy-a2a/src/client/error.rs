//! [`A2aClientError`].

use std::fmt;
use std::sync::Arc;

use crate::RpcError;
use crate::jsonrpc::ResponseError;

/// A request that could not be sent or a response that could not be read,
/// with the error that caused it as its [`source`](std::error::Error::source)
/// (shared, so that the client error stays `Clone`).
#[derive(Debug, Clone)]
pub struct TransportError {
    message: String,
    source: Arc<dyn std::error::Error + Send + Sync>,
}

impl TransportError {
    /// Wraps the cause.
    pub fn new(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        TransportError {
            message: source.to_string(),
            source: Arc::new(source),
        }
    }

    /// The cause in words.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

/// Two transport errors are equal when they say the same (the causes'
/// types need not be comparable).
impl PartialEq for TransportError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum A2aClientError {
    /// The request could not be sent or the response not read.
    #[error("A2A transport error: {0}")]
    Transport(#[source] TransportError),
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

/// The client error of a JSON-RPC response that carries an error (or is
/// not a JSON-RPC response).
pub(super) fn rpc_error(e: ResponseError) -> A2aClientError {
    match e {
        ResponseError::Rpc(e) => A2aClientError::Rpc(e),
        ResponseError::Malformed(m) => A2aClientError::Decode(m),
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[tokio::test]
    async fn a_transport_error_keeps_its_cause() {
        // Nothing listens on the port of a listener just dropped.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(9);
        let client = crate::A2aClient::new(format!("http://127.0.0.1:{port}"));
        let Err(error) = client.discover().await else {
            panic!("discovery on a closed port succeeded");
        };
        let A2aClientError::Transport(transport) = &error else {
            panic!("{error:?}");
        };
        let cause = error.source().and_then(|s| s.source());
        assert!(
            cause.is_some_and(|c| c.is::<reqwest::Error>()),
            "{transport:?}"
        );
        assert_eq!(
            error.to_string(),
            format!("A2A transport error: {transport}")
        );
    }
}
