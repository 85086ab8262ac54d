//! [`MemoryArtifactStore`].

use hashbrown::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::store::{ArtifactStore, StoredArtifact};
use looopy_core::{Artifact, Part, StoreError};

use crate::lock;
use crate::retention::{MemoryRetention, Retained};

/// Artifacts a context holds before it indexes them by id (a short list
/// is searched).
const INDEX_FROM: usize = 16;

/// Artifacts a context's list holds before it grows by more than one at a
/// time.
const SHORT_LIST: usize = 4;

/// The artifacts of one context, in creation order.
///
/// Most conversations have one or two artifacts, so they are a plain list
/// (one allocation of one artifact for the first), indexed by id only once there are more
/// than [`INDEX_FROM`]: a tree and an index around a single artifact would
/// cost more than the artifact's own entry.
#[derive(Debug, Default)]
struct ContextArtifacts {
    /// In creation order.
    artifacts: Vec<StoredArtifact>,
    /// Artifact id -> position in `artifacts`, for a long list.
    index: Option<HashMap<String, usize>>,
}

impl ContextArtifacts {
    fn position(&self, artifact_id: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(artifact_id).copied(),
            None => self
                .artifacts
                .iter()
                .position(|a| a.artifact.artifact_id == artifact_id),
        }
    }

    fn get(&self, artifact_id: &str) -> Option<&StoredArtifact> {
        self.position(artifact_id).map(|at| &self.artifacts[at])
    }

    fn get_mut(&mut self, artifact_id: &str) -> Option<&mut StoredArtifact> {
        self.position(artifact_id).map(|at| &mut self.artifacts[at])
    }

    fn insert_new(&mut self, stored: StoredArtifact) {
        let at = self.artifacts.len();
        if let Some(index) = &mut self.index {
            index.insert(stored.artifact.artifact_id.clone(), at);
        }
        if at < SHORT_LIST {
            // Exactly the room it takes: a list's first push makes room for
            // four artifacts, and most conversations keep one.
            self.artifacts.reserve_exact(1);
        }
        self.artifacts.push(stored);
        if self.index.is_none() && self.artifacts.len() > INDEX_FROM {
            self.reindex();
        }
    }

    /// Removes an artifact; the later ones move up (their order is kept).
    fn remove(&mut self, artifact_id: &str) -> Option<StoredArtifact> {
        let at = self.position(artifact_id)?;
        let removed = self.artifacts.remove(at);
        if self.index.is_some() {
            self.reindex();
        }
        Some(removed)
    }

    fn reindex(&mut self) {
        self.index = Some(
            self.artifacts
                .iter()
                .enumerate()
                .map(|(at, a)| (a.artifact.artifact_id.clone(), at))
                .collect(),
        );
    }
}

/// Artifacts in memory.
///
/// Appending parts costs O(parts appended). [`ArtifactStore::put`] on an
/// existing id replaces the artifact but keeps its creation time, and so its
/// place in [`ArtifactStore::list`]. [`with_retention`](Self::with_retention)
/// drops a conversation's artifacts `ttl_secs` after its last write and
/// keeps those of at most `max_entries` conversations.
#[derive(Debug, Default)]
pub struct MemoryArtifactStore {
    contexts: Mutex<Retained<ContextArtifacts>>,
}

impl MemoryArtifactStore {
    /// An empty store that keeps every artifact.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose conversations expire and are capped as `retention` says.
    pub fn with_retention(retention: &MemoryRetention) -> Self {
        MemoryArtifactStore {
            contexts: Mutex::new(Retained::new(retention.ttl(), retention.cap())),
        }
    }
}

#[async_trait]
impl ArtifactStore for MemoryArtifactStore {
    async fn put(
        &self,
        context_id: &str,
        task_id: &str,
        artifact: &Artifact,
    ) -> Result<(), StoreError> {
        let artifact = artifact.clone();
        let now = Utc::now();
        let mut contexts = lock(&self.contexts);
        let context = contexts.entry_or_insert_with(context_id, ContextArtifacts::default);
        if let Some(stored) = context.get_mut(&artifact.artifact_id) {
            stored.replace(task_id, artifact, now);
        } else {
            context.insert_new(StoredArtifact::created(context_id, task_id, artifact, now));
        }
        Ok(())
    }

    async fn append_parts(
        &self,
        context_id: &str,
        task_id: &str,
        artifact_id: &str,
        parts: &[Part],
    ) -> Result<(), StoreError> {
        let parts = parts.to_vec();
        let now = Utc::now();
        let mut contexts = lock(&self.contexts);
        let context = contexts.entry_or_insert_with(context_id, ContextArtifacts::default);
        if let Some(stored) = context.get_mut(artifact_id) {
            stored.append(parts, now);
        } else {
            let artifact = Artifact::new(artifact_id, parts);
            context.insert_new(StoredArtifact::created(context_id, task_id, artifact, now));
        }
        Ok(())
    }

    async fn get(
        &self,
        context_id: &str,
        artifact_id: &str,
    ) -> Result<Option<StoredArtifact>, StoreError> {
        Ok(lock(&self.contexts)
            .get(context_id)
            .and_then(|c| c.get(artifact_id))
            .cloned())
    }

    async fn list(&self, context_id: &str) -> Result<Vec<StoredArtifact>, StoreError> {
        Ok(lock(&self.contexts)
            .get(context_id)
            .map(|c| c.artifacts.clone())
            .unwrap_or_default())
    }

    async fn delete(&self, context_id: &str, artifact_id: &str) -> Result<(), StoreError> {
        let mut contexts = lock(&self.contexts);
        let Some(context) = contexts.get_mut(context_id) else {
            return Ok(());
        };
        let removed = context.remove(artifact_id);
        let emptied = context
            .artifacts
            .is_empty()
            .then(|| contexts.remove(context_id));
        drop(contexts);
        drop((removed, emptied)); // freed outside the lock
        Ok(())
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let removed = lock(&self.contexts).remove(context_id);
        drop(removed); // freed outside the lock
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ids(listed: &[StoredArtifact]) -> Vec<String> {
        listed
            .iter()
            .map(|a| a.artifact.artifact_id.clone())
            .collect()
    }

    /// A short list takes the room its artifacts need, no more (the store
    /// keeps one list for every conversation it holds).
    #[test]
    fn a_short_list_of_artifacts_takes_no_spare_room() {
        let mut context = ContextArtifacts::default();
        let now = chrono::Utc::now();
        let add = |context: &mut ContextArtifacts, i: usize| {
            let artifact = Artifact::new(format!("a{i}"), vec![Part::text("x")]);
            context.insert_new(StoredArtifact::created("c", "t", artifact, now));
        };
        for i in 0..SHORT_LIST {
            add(&mut context, i);
            assert_eq!(context.artifacts.capacity(), i + 1);
        }
        add(&mut context, SHORT_LIST);
        assert!(
            context.artifacts.capacity() > SHORT_LIST + 1,
            "then it doubles"
        );
        assert_eq!(context.get("a2").unwrap().artifact.artifact_id, "a2");
    }

    /// Past [`INDEX_FROM`] artifacts a context indexes them: lookups,
    /// replacements, appends and deletions still find the right one, and
    /// the list keeps the creation order.
    #[tokio::test]
    async fn a_context_with_many_artifacts_keeps_them_in_order_by_id() {
        let store = MemoryArtifactStore::new();
        let count = INDEX_FROM + 4;
        for i in 0..count {
            let artifact = Artifact::new(format!("a{i}"), vec![Part::text(format!("v{i}"))]);
            store.put("c", "t", &artifact).await.unwrap();
        }
        store.delete("c", "a3").await.unwrap();
        store.delete("c", &format!("a{}", count - 2)).await.unwrap();
        let replaced = Artifact::new("a5", vec![Part::text("new")]);
        store.put("c", "t2", &replaced).await.unwrap();
        store
            .append_parts("c", "t", "a7", &[Part::text("more")])
            .await
            .unwrap();
        let listed = store.list("c").await.unwrap();
        let expected: Vec<String> = (0..count)
            .filter(|i| *i != 3 && *i != count - 2)
            .map(|i| format!("a{i}"))
            .collect();
        assert_eq!(ids(&listed), expected, "creation order, a5 in its place");
        for id in &expected {
            let got = store.get("c", id).await.unwrap().unwrap();
            assert_eq!(&got.artifact.artifact_id, id);
        }
        let a5 = store.get("c", "a5").await.unwrap().unwrap();
        assert_eq!(a5.artifact.parts, [Part::text("new")]);
        assert_eq!(a5.task_id, "t2");
        let a7 = store.get("c", "a7").await.unwrap().unwrap();
        assert_eq!(a7.artifact.parts, [Part::text("v7"), Part::text("more")]);
        assert!(store.get("c", "a3").await.unwrap().is_none());
        // Back under the index's size, then empty: the context goes.
        for id in &expected {
            store.delete("c", id).await.unwrap();
        }
        assert!(store.list("c").await.unwrap().is_empty());
        assert!(lock(&store.contexts).get("c").is_none());
    }
}
