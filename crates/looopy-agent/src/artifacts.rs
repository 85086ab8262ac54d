//! Saving what a turn produces through the [`ArtifactStore`].
//!
//! Two sources:
//!
//! - the loop's `artifact-update` events (streamed answer text): the first
//!   chunk of an artifact (`append: false`) is written with `put`, later
//!   chunks with `append_parts`, in the order they came. Consecutive chunks
//!   of one artifact are batched (flushed at its last chunk, when another
//!   artifact starts, every [`FLUSH_EVERY`] chunks and at the end of the
//!   turn), their text joined into one part: a stored answer holds a part
//!   per batch (and one in all when the writes go with the turn's end),
//!   not one per chunk;
//! - artifacts made by tools ([`ToolResult::artifacts`]): the Agent stores
//!   each one and emits an `artifact-update` event for it; the saved tool
//!   message keeps only their ids
//!   ([`Message::artifact_ids`](looopy_core::Message::artifact_ids)).
//!
//! When the turn store saves artifacts with the turn's end
//! ([`TurnStore::artifacts`](looopy_core::store::TurnStore::artifacts) is
//! the Agent's own artifact store), the streamed writes are held back and
//! handed to that end instead of costing a round trip each: the turn's final
//! event is sent after the end is saved, so a client that reads the
//! artifact store once the turn ended finds every artifact the turn
//! announced. Held writes are written at once before a tool runs (a tool
//! may read the conversation's artifacts) and when the end is saved
//! without them (see [`ArtifactRecorder::write_held`]). Tool-made
//! artifacts are always written before their event goes out.
//!
//! A failing store does not fail the turn: the error is logged and counted.

use std::sync::Arc;

use looopy_core::store::{ArtifactStore, ArtifactWrite};
use looopy_core::{AgentEvent, Artifact, EventPayload, Part, ToolResult};

/// Chunks buffered for one artifact before they are written anyway.
pub const FLUSH_EVERY: usize = 32;

/// Chunks of one artifact not written yet.
struct Pending {
    artifact_id: String,
    /// Their parts, adjacent text joined.
    parts: Vec<Part>,
    /// How many chunks they came in.
    chunks: usize,
}

/// Holds back an append: joined to the held write of the same artifact
/// just before it, if any (the turn's end then writes the artifact in one
/// piece).
fn hold_append(held: &mut Vec<ArtifactWrite>, artifact_id: String, parts: Vec<Part>) {
    let into = match held.last_mut() {
        Some(ArtifactWrite::Put(artifact)) if artifact.artifact_id == artifact_id => {
            &mut artifact.parts
        }
        Some(ArtifactWrite::Append {
            artifact_id: id,
            parts,
        }) if *id == artifact_id => parts,
        _ => {
            held.push(ArtifactWrite::Append { artifact_id, parts });
            return;
        }
    };
    Part::extend_joined(into, parts);
}

/// Writes a turn's artifacts as its events go by.
pub(crate) struct ArtifactRecorder {
    store: Arc<dyn ArtifactStore>,
    context_id: Arc<str>,
    task_id: Arc<str>,
    pending: Option<Pending>,
    /// Writes held back for the turn's end; `None`: written as they come.
    held: Option<Vec<ArtifactWrite>>,
    pub(crate) failures: usize,
    pub(crate) saved: Vec<String>,
}

impl ArtifactRecorder {
    pub(crate) fn new(
        store: Arc<dyn ArtifactStore>,
        context_id: Arc<str>,
        task_id: Arc<str>,
        hold: bool,
    ) -> Self {
        ArtifactRecorder {
            store,
            context_id,
            task_id,
            pending: None,
            held: hold.then(Vec::new),
            failures: 0,
            saved: Vec::new(),
        }
    }

    fn failed(&mut self, what: &str, id: &str, error: &looopy_core::StoreError) {
        self.failures += 1;
        tracing::warn!(context_id = %self.context_id, artifact_id = id, %error, "could not {what} artifact");
    }

    fn note(&mut self, id: &str) {
        if !self.saved.iter().any(|s| s == id) {
            self.saved.push(id.to_owned());
        }
    }

    /// Writes buffered chunks (or holds them back with the other writes).
    pub(crate) async fn flush(&mut self) {
        if let Some(Pending {
            artifact_id, parts, ..
        }) = self.pending.take()
            && !parts.is_empty()
        {
            if let Some(held) = &mut self.held {
                hold_append(held, artifact_id, parts);
                return;
            }
            let result = self
                .store
                .append_parts(&self.context_id, &self.task_id, &artifact_id, &parts)
                .await;
            if let Err(e) = result {
                self.failed("append to", &artifact_id, &e);
            }
        }
    }

    /// The writes held back for the turn's end (buffered chunks included);
    /// empty when writes are not held.
    pub(crate) async fn take_held(&mut self) -> Vec<ArtifactWrite> {
        self.flush().await;
        self.held.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Writes the held-back writes through the artifact store now, in order
    /// (before a tool runs, or when the turn's end is saved without them);
    /// later writes are held again.
    pub(crate) async fn write_held(&mut self) {
        let writes = self.take_held().await;
        self.write_now(&writes).await;
    }

    /// Writes `writes` through the artifact store, in order.
    pub(crate) async fn write_now(&mut self, writes: &[ArtifactWrite]) {
        for write in writes {
            let result = write
                .apply(self.store.as_ref(), &self.context_id, &self.task_id)
                .await;
            if let Err(e) = result {
                self.failed("save", write.artifact_id(), &e);
            }
        }
    }

    async fn put(&mut self, artifact: &Artifact) {
        if let Some(held) = &mut self.held {
            held.push(ArtifactWrite::Put(artifact.clone()));
            self.note(&artifact.artifact_id);
            return;
        }
        match self
            .store
            .put(&self.context_id, &self.task_id, artifact)
            .await
        {
            Ok(()) => self.note(&artifact.artifact_id),
            Err(e) => self.failed("save", &artifact.artifact_id, &e),
        }
    }

    /// Records an `artifact-update` event of the loop; ignores other events.
    pub(crate) async fn observe(&mut self, event: &AgentEvent) {
        let EventPayload::ArtifactUpdate {
            artifact,
            append,
            last_chunk,
        } = &*event.payload
        else {
            return;
        };
        let same = self
            .pending
            .as_ref()
            .is_some_and(|p| p.artifact_id == artifact.artifact_id);
        if !same {
            self.flush().await;
        }
        if !append {
            self.put(artifact).await;
        } else {
            self.note(&artifact.artifact_id);
            let pending = self.pending.get_or_insert_with(|| Pending {
                artifact_id: artifact.artifact_id.clone(),
                parts: Vec::new(),
                chunks: 0,
            });
            Part::extend_joined(&mut pending.parts, artifact.parts.iter().cloned());
            pending.chunks += 1;
            if pending.chunks >= FLUSH_EVERY {
                self.flush().await;
            }
        }
        if *last_chunk {
            self.flush().await;
        }
    }

    /// Stores the artifacts a tool result carries and returns the events
    /// announcing them.
    pub(crate) async fn tool_artifacts(&mut self, result: &ToolResult) -> Vec<AgentEvent> {
        let artifacts = &result.artifacts;
        if artifacts.is_empty() {
            return Vec::new();
        }
        self.write_held().await;
        let mut events = Vec::with_capacity(artifacts.len());
        for artifact in artifacts {
            let held = self.held.take();
            self.put(artifact).await;
            self.held = held;
            events.push(AgentEvent::new(
                self.task_id.clone(),
                self.context_id.clone(),
                EventPayload::ArtifactUpdate {
                    artifact: artifact.clone(),
                    append: false,
                    last_chunk: true,
                },
            ));
        }
        events
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use looopy_stores_memory::MemoryArtifactStore;

    use super::*;

    fn chunk(i: usize, last: bool) -> AgentEvent {
        AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::ArtifactUpdate {
                artifact: Artifact::new("answer", vec![Part::text(format!("w{i} "))]),
                append: i > 0,
                last_chunk: last,
            },
        )
    }

    fn text(parts: &[Part]) -> Vec<&str> {
        parts.iter().filter_map(Part::as_text).collect()
    }

    const CHUNKS: usize = 2 * FLUSH_EVERY + 6;

    fn whole() -> String {
        (0..CHUNKS).map(|i| format!("w{i} ")).collect()
    }

    #[tokio::test]
    async fn written_as_they_come_each_batch_is_one_part() {
        let store = Arc::new(MemoryArtifactStore::new());
        let mut recorder = ArtifactRecorder::new(store.clone(), "c".into(), "t".into(), false);
        for i in 0..CHUNKS {
            recorder.observe(&chunk(i, i + 1 == CHUNKS)).await;
        }
        let stored = store.get("c", "answer").await.unwrap().unwrap();
        // The first chunk is put; then two full batches and the rest.
        assert_eq!(stored.artifact.parts.len(), 4);
        assert_eq!(text(&stored.artifact.parts).concat(), whole());
        assert_eq!(recorder.failures, 0);
    }

    #[tokio::test]
    async fn held_for_the_turns_end_the_answer_is_one_put_of_one_part() {
        let store = Arc::new(MemoryArtifactStore::new());
        let mut recorder = ArtifactRecorder::new(store.clone(), "c".into(), "t".into(), true);
        for i in 0..CHUNKS {
            recorder.observe(&chunk(i, i + 1 == CHUNKS)).await;
        }
        let held = recorder.take_held().await;
        assert_eq!(held.len(), 1, "{held:?}");
        let ArtifactWrite::Put(artifact) = &held[0] else {
            panic!("{held:?}")
        };
        assert_eq!(text(&artifact.parts), [whole()]);
        assert!(
            store.get("c", "answer").await.unwrap().is_none(),
            "held back"
        );
    }
}
