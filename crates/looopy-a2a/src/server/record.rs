//! What the server keeps in a [`TaskRecord`] besides owner and status: the
//! task's history and artifacts, and where its turns sit in the event log.
//! Stored under the reserved metadata key `looopy`, so that a second server
//! process sharing the stores sees the same task.

use chrono::Utc;
use looopy_core::store::{StoredEvent, TaskRecord};
use looopy_core::{Artifact, EventPayload, Message, Part, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::TaskSnapshot;

/// The metadata key of [`Bookkeeping`].
pub(crate) const KEY: &str = "looopy";

/// The server's notes on a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Bookkeeping {
    /// The client's messages and the agent's answers, oldest first.
    #[serde(default)]
    pub(crate) history: Vec<Message>,
    /// Artifacts of the finished turns.
    #[serde(default)]
    pub(crate) artifacts: Vec<Artifact>,
    /// The id of the last event logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_event_id: Option<String>,
    /// The current turn's events come after this id (`None`: from the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) turn_start_event_id: Option<String>,
    /// The id of the current turn's final event, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) final_event_id: Option<String>,
    /// A server process asked the one running the turn to cancel it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) cancel_requested: bool,
    /// Turns run so far.
    #[serde(default)]
    pub(crate) turns: u32,
}

impl Bookkeeping {
    /// The notes of a record (empty when it has none or they do not parse).
    pub(crate) fn of(record: &TaskRecord) -> Self {
        record
            .metadata
            .get(KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// Writes the notes into a record.
    pub(crate) fn store(&self, record: &mut TaskRecord) {
        if let Ok(v) = serde_json::to_value(self) {
            record.metadata.insert(KEY.into(), v);
        }
    }
}

/// A new record for a task owned by `owner`.
pub(crate) fn new_record(
    task_id: &str,
    context_id: &str,
    owner: &str,
    status: TaskStatus,
) -> TaskRecord {
    let now = Utc::now();
    TaskRecord {
        task_id: task_id.into(),
        context_id: context_id.into(),
        owner: Some(owner.into()),
        status,
        created_at: now,
        updated_at: now,
        metadata: Map::new(),
    }
}

/// Applies an `artifact-update` to a list of artifacts: a chunk with
/// `append` extends the artifact of that id (adjacent text is joined),
/// otherwise it replaces it (or adds it).
pub(crate) fn fold_artifact(artifacts: &mut Vec<Artifact>, update: &Artifact, append: bool) {
    match artifacts
        .iter_mut()
        .find(|a| a.artifact_id == update.artifact_id)
    {
        Some(existing) if append => {
            for part in &update.parts {
                match (existing.parts.last_mut(), part) {
                    (Some(Part::Text { text }), Part::Text { text: more }) => text.push_str(more),
                    _ => existing.parts.push(part.clone()),
                }
            }
            if existing.name.is_none() {
                existing.name.clone_from(&update.name);
            }
        }
        Some(existing) => *existing = update.clone(),
        None => artifacts.push(update.clone()),
    }
}

/// Folds the artifact updates among `events` into `artifacts`.
pub(crate) fn fold_events(artifacts: &mut Vec<Artifact>, events: &[StoredEvent]) {
    for e in events {
        if let EventPayload::ArtifactUpdate {
            artifact, append, ..
        } = &*e.event.payload
        {
            fold_artifact(artifacts, artifact, *append);
        }
    }
}

/// The record as the client sees it. `history_length`: at most that many
/// recent messages (0: none).
pub(crate) fn snapshot(
    record: &TaskRecord,
    artifacts: Vec<Artifact>,
    history_length: Option<usize>,
) -> TaskSnapshot {
    let bk = Bookkeeping::of(record);
    let mut history = bk.history;
    if let Some(n) = history_length {
        let skip = history.len().saturating_sub(n);
        history.drain(..skip);
    }
    let mut metadata = record.metadata.clone();
    metadata.remove(KEY);
    TaskSnapshot {
        id: record.task_id.clone(),
        context_id: record.context_id.clone(),
        status: record.status.clone(),
        artifacts,
        history,
        metadata: metadata
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .collect::<Map<String, Value>>(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use looopy_core::TaskState;

    use super::*;

    #[test]
    fn bookkeeping_round_trips_and_stays_out_of_the_snapshot() {
        let mut r = new_record("t", "c", "alice", TaskStatus::new(TaskState::Working));
        r.metadata.insert("user".into(), Value::from(1));
        let bk = Bookkeeping {
            history: vec![
                Message::user("a"),
                Message::assistant("b"),
                Message::user("c"),
            ],
            last_event_id: Some("7".into()),
            ..Default::default()
        };
        bk.store(&mut r);
        assert_eq!(Bookkeeping::of(&r), bk);
        let s = snapshot(&r, Vec::new(), Some(2));
        assert_eq!(s.history.len(), 2);
        assert_eq!(s.history[0].text(), "b");
        assert!(s.metadata.get(KEY).is_none());
        assert_eq!(s.metadata["user"], 1);
        assert_eq!(snapshot(&r, Vec::new(), Some(0)).history.len(), 0);
    }

    #[test]
    fn chunks_join_into_one_text() {
        let mut arts = Vec::new();
        fold_artifact(
            &mut arts,
            &Artifact::new("a", vec![Part::text("Hel")]).with_name("response"),
            false,
        );
        fold_artifact(&mut arts, &Artifact::new("a", vec![Part::text("lo")]), true);
        fold_artifact(&mut arts, &Artifact::new("b", vec![Part::text("x")]), true);
        assert_eq!(arts.len(), 2);
        assert_eq!(arts[0].parts, vec![Part::text("Hello")]);
        assert_eq!(arts[0].name.as_deref(), Some("response"));
        fold_artifact(
            &mut arts,
            &Artifact::new("a", vec![Part::text("new")]),
            false,
        );
        assert_eq!(arts[0].parts, vec![Part::text("new")]);
    }
}
