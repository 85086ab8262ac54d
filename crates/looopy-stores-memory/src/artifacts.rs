//! [`MemoryArtifactStore`].

use std::collections::BTreeMap;

use hashbrown::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::store::{ArtifactStore, StoredArtifact};
use looopy_core::{Artifact, Part, StoreError};

use crate::lock;
use crate::retention::{MemoryRetention, Retained};

/// The artifacts of one context, in creation order.
#[derive(Debug, Default)]
struct ContextArtifacts {
    /// Creation sequence number -> artifact. Boxed: a tree node holds
    /// eleven values, and most conversations have one or two artifacts.
    by_seq: BTreeMap<u64, Box<StoredArtifact>>,
    /// Artifact id -> creation sequence number.
    seq_of: HashMap<String, u64>,
    next_seq: u64,
}

impl ContextArtifacts {
    fn get(&self, artifact_id: &str) -> Option<&StoredArtifact> {
        let seq = self.seq_of.get(artifact_id)?;
        self.by_seq.get(seq).map(|a| &**a)
    }

    fn get_mut(&mut self, artifact_id: &str) -> Option<&mut StoredArtifact> {
        let seq = self.seq_of.get(artifact_id)?;
        self.by_seq.get_mut(seq).map(|a| &mut **a)
    }

    fn insert_new(&mut self, stored: StoredArtifact) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.seq_of.insert(stored.artifact.artifact_id.clone(), seq);
        self.by_seq.insert(seq, Box::new(stored));
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
            .map(|c| {
                c.by_seq
                    .values()
                    .map(|a| StoredArtifact::clone(a))
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn delete(&self, context_id: &str, artifact_id: &str) -> Result<(), StoreError> {
        let mut contexts = lock(&self.contexts);
        let Some(context) = contexts.get_mut(context_id) else {
            return Ok(());
        };
        if let Some(seq) = context.seq_of.remove(artifact_id) {
            context.by_seq.remove(&seq);
        }
        if context.by_seq.is_empty() {
            contexts.remove(context_id);
        }
        Ok(())
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let removed = lock(&self.contexts).remove(context_id);
        drop(removed); // freed outside the lock
        Ok(())
    }
}
