//! [`MemoryCheckpointStore`].

use std::sync::Mutex;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{CheckpointStore, SaveInPlace, TaskCheckpoint};

use crate::lock;
use crate::retention::{MemoryRetention, Retained};

/// Loop checkpoints in memory.
///
/// A checkpoint's history is a persistent vector, so saving and loading one
/// costs O(1) in the length of the conversation (plus its metadata).
/// [`new`](Self::new) keeps checkpoints until they are deleted;
/// [`with_retention`](Self::with_retention) lets them expire
/// `task_ttl_secs` after their last save and caps how many are kept.
#[derive(Debug, Default)]
pub struct MemoryCheckpointStore {
    checkpoints: Mutex<Retained<TaskCheckpoint>>,
}

impl MemoryCheckpointStore {
    /// An empty store that keeps checkpoints until they are deleted.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose checkpoints expire and are capped as `retention` says.
    pub fn with_retention(retention: &MemoryRetention) -> Self {
        MemoryCheckpointStore {
            checkpoints: Mutex::new(Retained::new(retention.task_ttl(), retention.cap())),
        }
    }

    /// Number of stored checkpoints.
    pub fn len(&self) -> usize {
        lock(&self.checkpoints).len()
    }

    /// Whether no checkpoint is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl CheckpointStore for MemoryCheckpointStore {
    async fn save(&self, checkpoint: &TaskCheckpoint) -> Result<(), StoreError> {
        self.save_owned(checkpoint.clone()).await
    }

    async fn save_owned(&self, checkpoint: TaskCheckpoint) -> Result<(), StoreError> {
        self.save_now(checkpoint)
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskCheckpoint>, StoreError> {
        Ok(lock(&self.checkpoints).get(task_id).cloned())
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let removed = lock(&self.checkpoints).remove(task_id);
        drop(removed); // freed outside the lock
        Ok(())
    }

    /// A save is a map insert under a lock: it never waits.
    fn in_place(&self) -> Option<&dyn SaveInPlace> {
        Some(self)
    }
}

impl SaveInPlace for MemoryCheckpointStore {
    fn save_now(&self, checkpoint: TaskCheckpoint) -> Result<(), StoreError> {
        let previous = {
            let mut checkpoints = lock(&self.checkpoints);
            // A turn's next checkpoint replaces its last one in place (no
            // new key).
            match checkpoints.get_mut(&checkpoint.task_id) {
                Some(slot) => Some(std::mem::replace(slot, checkpoint)),
                None => checkpoints.insert(checkpoint.task_id.to_string(), checkpoint),
            }
        };
        drop(previous); // freed outside the lock
        Ok(())
    }
}
