//! [`LoopError`]: why a turn could not start or resume.

use looopy_core::{StoreError, ToolError};

/// Why a turn failed outside the model and the tools. A turn that fails
/// still ends with a final `failed` status event carrying this message.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum LoopError {
    /// Tool providers disagree or failed to list their tools.
    #[error("tool configuration error: {0}")]
    Tools(#[from] ToolError),
    /// The task state store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `resume` found no checkpoint.
    #[error("no checkpoint for task '{task_id}'")]
    NoCheckpoint {
        /// The task.
        task_id: String,
    },
    /// Resume needs a task state store.
    #[error("resume needs a CheckpointStore")]
    NoTaskStore,
}
