//! A finished turn's streamed chunks, kept as one event per artifact.
//!
//! A streamed answer reaches the log as many `artifact-update` chunks (a
//! real model's answer is hundreds), and the log keeps a task's events for
//! as long as the task is kept, so that a reconnecting stream can be
//! replayed. Once the turn has logged its final event, the chunks of each
//! artifact it streamed are replaced by one event holding the whole
//! artifact, in the place (and with the id) of its last chunk:
//! [`EventLog::replace_entries`](looopy_core::store::EventLog::replace_entries).
//!
//! The readers that follow the turn while it runs in this process (the
//! stream of the request that started it, a subscription, the follower
//! that feeds the task's webhooks) read the chunks as they came: the
//! compaction waits until each has read the final event (or gone, see
//! `reader.rs`), at most [`READER_WAIT`]. Any other reader is never left short:
//! one that had read up to a chunk reads the whole artifact next, with
//! `append: false`, which replaces its partial copy (the A2A rule for an
//! update without `append`); one that had read past the last chunk reads
//! nothing of it again. When another turn of the task appended first (a
//! task that waited for input, continued at once), the log is left as it
//! is.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::StoredEvent;
use looopy_core::{AgentEvent, EventPayload};

use super::{Tasks, TurnState};
use crate::server::record::fold_artifact;

/// How long a finished turn's chunks wait for the readers that follow it
/// here: a reader slower than this reads the artifact whole.
const READER_WAIT: Duration = Duration::from_secs(10);

/// What a finished turn's log loses and gains.
#[derive(Debug, PartialEq)]
struct Compaction {
    /// The ids of the chunks that go.
    remove: Vec<String>,
    /// One whole-artifact event per artifact streamed in more than one
    /// chunk, each with the id of its last chunk.
    put: Vec<StoredEvent>,
}

impl Tasks {
    /// Replaces the turn's streamed chunks by one event per artifact (see
    /// the module's description). Best effort: a log that fails keeps the
    /// chunks, which serve every reader all the same.
    pub(super) async fn compact_chunks(&self, turn: &mut TurnState) {
        let chunks = std::mem::take(&mut turn.chunks);
        let Some(last) = turn.final_event_id.take() else {
            return;
        };
        if chunks.len() < 2 {
            return; // no artifact came in more than one chunk
        }
        if let Some(gone) = turn.readers.take() {
            let _ = tokio::time::timeout(READER_WAIT, gone).await;
        }
        // Built after the wait: the whole artifacts are not held meanwhile.
        let Some(compaction) = compaction(&chunks) else {
            return;
        };
        drop(chunks);
        let replaced = self
            .log
            .replace_entries(&turn.task_id, &last, &compaction.remove, compaction.put)
            .await;
        match replaced {
            Ok(true) => {}
            Ok(false) => {
                tracing::debug!(task_id = %turn.task_id, "the log moved on; its chunks stay");
            }
            Err(error) => {
                tracing::warn!(task_id = %turn.task_id, %error, "could not compact the turn's chunks");
            }
        }
    }
}

/// The compaction of a turn's logged `artifact-update` events (in log
/// order); `None` when no artifact came in more than one.
fn compaction(chunks: &[StoredEvent]) -> Option<Compaction> {
    let mut artifacts: Vec<(&str, Vec<&StoredEvent>)> = Vec::new();
    for chunk in chunks {
        let EventPayload::ArtifactUpdate { artifact, .. } = &*chunk.event.payload else {
            continue;
        };
        match artifacts
            .iter_mut()
            .find(|(id, _)| *id == artifact.artifact_id)
        {
            Some((_, events)) => events.push(chunk),
            None => artifacts.push((&artifact.artifact_id, vec![chunk])),
        }
    }
    let mut compaction = Compaction {
        remove: Vec::new(),
        put: Vec::new(),
    };
    for (_, events) in artifacts.iter().filter(|(_, events)| events.len() > 1) {
        let Some(whole) = whole(events) else { continue };
        compaction
            .remove
            .extend(events.iter().map(|event| event.id.clone()));
        compaction.put.push(whole);
    }
    (!compaction.put.is_empty()).then_some(compaction)
}

/// One artifact's chunks as one event in the place of the last: the
/// artifact as they build it, sent whole (`append` only when every chunk
/// extended an artifact of an earlier turn), its last chunk's `lastChunk`.
fn whole(events: &[&StoredEvent]) -> Option<StoredEvent> {
    let last = events.last()?;
    let mut folded = Vec::with_capacity(1);
    let mut extends_earlier = true;
    let mut last_chunk = false;
    for event in events {
        if let EventPayload::ArtifactUpdate {
            artifact,
            append,
            last_chunk: end,
        } = &*event.event.payload
        {
            fold_artifact(&mut folded, artifact, *append);
            extends_earlier &= *append;
            last_chunk = *end;
        }
    }
    let artifact = folded.pop()?;
    Some(StoredEvent {
        id: last.id.clone(),
        event: Arc::new(AgentEvent {
            task_id: last.event.task_id.clone(),
            context_id: last.event.context_id.clone(),
            timestamp: last.event.timestamp,
            payload: Box::new(EventPayload::ArtifactUpdate {
                artifact,
                append: extends_earlier,
                last_chunk,
            }),
        }),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use looopy_core::{Artifact, Part};

    use super::*;

    fn chunk(id: u32, artifact: &str, text: &str, append: bool, last: bool) -> StoredEvent {
        let mut artifact = Artifact::new(artifact, vec![Part::text(text)]);
        if !append {
            artifact.name = Some("answer".into());
        }
        StoredEvent {
            id: id.to_string(),
            event: Arc::new(AgentEvent::new(
                "t".into(),
                "c".into(),
                EventPayload::ArtifactUpdate {
                    artifact,
                    append,
                    last_chunk: last,
                },
            )),
        }
    }

    fn update(event: &StoredEvent) -> (&Artifact, bool, bool) {
        match &*event.event.payload {
            EventPayload::ArtifactUpdate {
                artifact,
                append,
                last_chunk,
            } => (artifact, *append, *last_chunk),
            other => panic!("not an artifact update: {other:?}"),
        }
    }

    #[test]
    fn each_artifact_in_chunks_becomes_one_whole_event_in_its_last_chunks_place() {
        let chunks = [
            chunk(2, "a", "one ", false, false),
            chunk(3, "b", "tool output", false, true),
            chunk(4, "a", "two ", true, false),
            chunk(6, "a", "three", true, true),
        ];
        let compaction = compaction(&chunks).unwrap();
        assert_eq!(compaction.remove, ["2", "4", "6"]);
        assert_eq!(compaction.put.len(), 1);
        let put = &compaction.put[0];
        assert_eq!(put.id, "6");
        let (artifact, append, last) = update(put);
        assert_eq!(artifact.artifact_id, "a");
        assert_eq!(artifact.name.as_deref(), Some("answer"));
        assert_eq!(artifact.parts, [Part::text("one two three")]);
        assert!(!append, "the whole artifact replaces a reader's copy");
        assert!(last);
    }

    #[test]
    fn chunks_that_extend_an_earlier_turns_artifact_still_extend_it() {
        let chunks = [
            chunk(7, "a", "more ", true, false),
            chunk(8, "a", "text", true, false),
        ];
        let put = &compaction(&chunks).unwrap().put[0];
        let (artifact, append, last) = update(put);
        assert_eq!(artifact.parts, [Part::text("more text")]);
        assert!(append, "the earlier turn's part must not be replaced");
        assert!(!last, "the artifact was not finished");
    }

    #[test]
    fn a_turn_without_an_artifact_in_chunks_changes_nothing() {
        assert_eq!(compaction(&[]), None);
        let single = [
            chunk(1, "a", "whole", false, true),
            chunk(2, "b", "whole", false, true),
        ];
        assert_eq!(compaction(&single), None);
    }
}
