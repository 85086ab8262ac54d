//! Task records as the server uses them, and what a client sees of a task.
//!
//! A [`TaskRecord`] holds the owner, the status and where the task's turns
//! sit in the event log, in typed fields; every change goes through the
//! store's atomic update. History and artifacts are not in it: they are
//! read from where the turns keep them ([`TurnRunner`](crate::TurnRunner)'s
//! `messages` and `artifacts`).

use looopy_core::store::{StoredEvent, TaskRecord};
use looopy_core::{Artifact, EventPayload, Message, Part, Role};
use serde_json::{Map, Value};

use crate::model::TaskSnapshot;

/// The metadata key under which earlier versions kept their notes in the
/// record (JSON); never shown to clients.
pub(crate) const LEGACY_KEY: &str = "looopy";

/// A task's share of its conversation: the messages from each message that
/// started one of its turns (`turn_message_ids`) up to the next user
/// message that started none (a turn of another task), of which the
/// client's messages and the agent's answers (assistant messages without
/// tool calls; tool calls and results stay internal). The model's
/// reasoning parts stay internal too: they are left out of each message.
pub(crate) fn task_history(messages: &[Message], turn_message_ids: &[String]) -> Vec<Message> {
    let mut out = Vec::new();
    let mut inside = false;
    for m in messages {
        if m.role == Role::User {
            inside = turn_message_ids.contains(&m.message_id);
        }
        let shown = match m.role {
            Role::User => true,
            Role::Assistant => m.tool_calls.is_empty() && m.parts.iter().any(|p| !p.is_reasoning()),
            _ => false,
        };
        if inside && shown {
            out.push(if m.parts.iter().any(Part::is_reasoning) {
                m.without_reasoning()
            } else {
                m.clone()
            });
        }
    }
    out
}

/// An artifact with adjacent text chunks joined into one part.
pub(crate) fn joined(artifact: Artifact) -> Artifact {
    let mut parts: Vec<Part> = Vec::with_capacity(artifact.parts.len());
    Part::extend_joined(&mut parts, artifact.parts);
    Artifact { parts, ..artifact }
}

pub(crate) use looopy_core::fold_artifact;

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

/// The record as the client sees it, with the task's history (at most
/// `history_length` recent messages; 0: none) and artifacts.
pub(crate) fn snapshot(
    record: &TaskRecord,
    mut history: Vec<Message>,
    artifacts: Vec<Artifact>,
    history_length: Option<usize>,
) -> TaskSnapshot {
    if let Some(n) = history_length {
        let skip = history.len().saturating_sub(n);
        history.drain(..skip);
    }
    TaskSnapshot {
        id: record.task_id.clone(),
        context_id: record.context_id.clone(),
        status: record.status.clone(),
        artifacts,
        history,
        metadata: record
            .metadata
            .iter()
            .filter(|(k, v)| *k != LEGACY_KEY && !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Map<String, Value>>(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use looopy_core::{TaskState, TaskStatus};

    use super::*;

    #[test]
    fn the_snapshot_limits_history_and_hides_legacy_notes() {
        let mut r = TaskRecord::new(
            "t",
            "c",
            Some("alice".into()),
            TaskStatus::new(TaskState::Working),
        );
        r.metadata.insert("user".into(), Value::from(1));
        r.metadata
            .insert(LEGACY_KEY.into(), Value::from("old notes"));
        let history = vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ];
        let s = snapshot(&r, history.clone(), Vec::new(), Some(2));
        assert_eq!(s.history.len(), 2);
        assert_eq!(s.history[0].text(), "b");
        assert!(s.metadata.get(LEGACY_KEY).is_none());
        assert_eq!(s.metadata["user"], 1);
        assert_eq!(snapshot(&r, history, Vec::new(), Some(0)).history.len(), 0);
    }

    #[test]
    fn a_task_history_is_its_turns_share_of_the_conversation() {
        let mine = Message::user("mine");
        let again = Message::user("again");
        let mut call = Message::assistant("");
        call.tool_calls
            .push(looopy_core::ToolCall::new("c1", "lookup", "{}"));
        let conversation = vec![
            Message::user("other task"),
            Message::assistant("other answer"),
            mine.clone(),
            call,
            Message::new(Role::Tool, "found"),
            Message::assistant("my answer"),
            Message::user("a later task"),
            Message::assistant("its answer"),
            again.clone(),
            Message::assistant("my second answer"),
        ];
        let ids = vec![mine.message_id.clone(), again.message_id.clone()];
        let texts: Vec<String> = task_history(&conversation, &ids)
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(texts, ["mine", "my answer", "again", "my second answer"]);
        assert!(task_history(&conversation, &[]).is_empty());
    }

    #[test]
    fn a_task_history_never_shows_the_models_reasoning() {
        let asked = Message::user("why?");
        let thought = looopy_core::Reasoning::new("anthropic", "private").with_signature("sig");
        let conversation = vec![
            asked.clone(),
            // Reasoning alone (before a tool call, say): nothing to show.
            Message::with_parts(Role::Assistant, vec![Part::reasoning(thought.clone())]),
            Message::with_parts(
                Role::Assistant,
                vec![Part::reasoning(thought), Part::text("because")],
            ),
        ];
        let history = task_history(&conversation, std::slice::from_ref(&asked.message_id));
        assert_eq!(history.len(), 2);
        assert_eq!(history[1].parts, vec![Part::text("because")]);
        assert!(history.iter().all(|m| m.reasoning().next().is_none()));
    }

    #[test]
    fn stored_chunks_are_joined() {
        let a = Artifact::new(
            "a",
            vec![
                Part::text("Hel"),
                Part::text("lo"),
                Part::data(serde_json::json!(1)),
                Part::text("!"),
            ],
        );
        assert_eq!(
            joined(a).parts,
            vec![
                Part::text("Hello"),
                Part::data(serde_json::json!(1)),
                Part::text("!")
            ]
        );
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
