//! [`StoreError`]: why a store operation failed, the same for every store
//! and backend.

/// Why a store operation failed. No variant means "partly done": a failed
/// write wrote nothing.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum StoreError {
    /// The backend cannot be reached (connection refused, pool exhausted, timeout).
    #[error("store unavailable: {message}")]
    Unavailable {
        /// What failed.
        message: String,
    },
    /// Stored data could not be (de)serialized.
    #[error("store data could not be read or written: {message}")]
    Serialization {
        /// What failed.
        message: String,
    },
    /// The thing does not exist.
    #[error("not found: {what}")]
    NotFound {
        /// What was looked for.
        what: String,
    },
    /// A concurrent writer won (lock held by another owner, stale range).
    #[error("conflict: {message}")]
    Conflict {
        /// What conflicted.
        message: String,
    },
    /// A turn's end was refused: the conversation's turn lease is no longer
    /// held by the turn (another process took it over). Nothing was written.
    #[error("the turn lease of context `{context_id}` is held by another owner; nothing was saved")]
    LeaseLost {
        /// The conversation.
        context_id: String,
    },
    /// A checkpoint builds on the conversation's stored history
    /// ([`TaskCheckpoint::stored_history`](super::TaskCheckpoint::stored_history)), and that history was rewritten
    /// (compacted, replaced or deleted) since: the checkpoint's messages
    /// cannot be rebuilt.
    #[error(
        "the stored history of context `{context_id}` that the checkpoint of task `{task_id}` builds on was rewritten; the checkpoint cannot be rebuilt"
    )]
    HistoryRewritten {
        /// The conversation.
        context_id: String,
        /// The task whose checkpoint builds on it.
        task_id: String,
    },
    /// Any other backend error.
    #[error("store error: {message}")]
    Backend {
        /// What failed.
        message: String,
    },
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Serialization {
            message: e.to_string(),
        }
    }
}
