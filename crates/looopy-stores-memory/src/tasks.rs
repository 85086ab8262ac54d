//! [`MemoryTaskStateStore`].

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{TaskCheckpoint, TaskStateStore};

use crate::lock;

/// Loop checkpoints in memory.
///
/// A checkpoint's history is a persistent vector, so saving and loading one
/// costs O(1) in the length of the conversation (plus its metadata).
#[derive(Debug, Default)]
pub struct MemoryTaskStateStore {
    checkpoints: Mutex<HashMap<String, TaskCheckpoint>>,
}

impl MemoryTaskStateStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
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
impl TaskStateStore for MemoryTaskStateStore {
    async fn save(&self, checkpoint: &TaskCheckpoint) -> Result<(), StoreError> {
        let checkpoint = checkpoint.clone();
        let previous = lock(&self.checkpoints).insert(checkpoint.task_id.clone(), checkpoint);
        drop(previous); // freed outside the lock
        Ok(())
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskCheckpoint>, StoreError> {
        Ok(lock(&self.checkpoints).get(task_id).cloned())
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let removed = lock(&self.checkpoints).remove(task_id);
        drop(removed); // freed outside the lock
        Ok(())
    }
}
