//! [`MemoryPushConfigStore`]: A2A push notification configs in memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{PushConfig, PushConfigStore};

use crate::lock;

/// Push notification configs in memory: per task, a map ordered by config
/// id. Nothing expires: a server that keeps tasks in memory for good keeps
/// their configs too, until [`PushConfigStore::delete_all`].
#[derive(Debug, Default)]
pub struct MemoryPushConfigStore {
    tasks: Mutex<HashMap<String, BTreeMap<String, PushConfig>>>,
}

impl MemoryPushConfigStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl PushConfigStore for MemoryPushConfigStore {
    async fn put(&self, config: &PushConfig) -> Result<(), StoreError> {
        lock(&self.tasks)
            .entry(config.task_id.clone())
            .or_default()
            .insert(config.id.clone(), config.clone());
        Ok(())
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<PushConfig>, StoreError> {
        Ok(lock(&self.tasks)
            .get(task_id)
            .and_then(|configs| configs.get(id))
            .cloned())
    }

    async fn list(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        Ok(lock(&self.tasks)
            .get(task_id)
            .map(|configs| configs.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut tasks = lock(&self.tasks);
        let Some(configs) = tasks.get_mut(task_id) else {
            return Ok(false);
        };
        let removed = configs.remove(id).is_some();
        if configs.is_empty() {
            tasks.remove(task_id);
        }
        Ok(removed)
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), StoreError> {
        lock(&self.tasks).remove(task_id);
        Ok(())
    }
}
