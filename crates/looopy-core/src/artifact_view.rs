//! [`ConversationArtifacts`]: the artifacts of a turn's conversation, for
//! tools to read.

use std::fmt;
use std::sync::Arc;

use crate::store::{ArtifactStore, StoreError, StoredArtifact};

/// A read-only view of one conversation's artifacts, carried by the
/// [`TurnContext`](crate::TurnContext) of every turn an Agent runs, so that
/// a tool can read what earlier turns (or earlier calls of this turn)
/// produced. It offers no way to write: tools that change artifacts go
/// through their own store handle, so that what the model may change stays
/// an explicit choice of the tool's author.
#[derive(Clone)]
pub struct ConversationArtifacts {
    store: Arc<dyn ArtifactStore>,
    context_id: Arc<str>,
}

impl ConversationArtifacts {
    /// The artifacts of `context_id` in `store`.
    pub fn new(store: Arc<dyn ArtifactStore>, context_id: impl Into<Arc<str>>) -> Self {
        ConversationArtifacts {
            store,
            context_id: context_id.into(),
        }
    }

    /// The conversation.
    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// Every artifact of the conversation, oldest first.
    pub async fn list(&self) -> Result<Vec<StoredArtifact>, StoreError> {
        self.store.list(&self.context_id).await
    }

    /// One artifact, if the conversation has it.
    pub async fn get(&self, artifact_id: &str) -> Result<Option<StoredArtifact>, StoreError> {
        self.store.get(&self.context_id, artifact_id).await
    }
}

impl fmt::Debug for ConversationArtifacts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConversationArtifacts")
            .field("context_id", &self.context_id)
            .finish_non_exhaustive()
    }
}
