//! A2A task model: [`TaskState`], [`TaskStatus`], [`Artifact`].

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Message, Part};

/// Every state of an A2A task. The serde form is the A2A v0.3 form
/// (`input-required`); the A2A layer maps it to v1.0's `TASK_STATE_*` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TaskState {
    /// Received, not yet started.
    Submitted,
    /// Running.
    Working,
    /// Waiting for the client (a question, client tool results).
    InputRequired,
    /// Finished successfully.
    Completed,
    /// Cancelled.
    Canceled,
    /// Failed.
    Failed,
    /// Refused by the agent.
    Rejected,
    /// Waiting for the client to authenticate.
    AuthRequired,
    /// State not known.
    Unknown,
}

impl TaskState {
    /// Whether no further update will follow (completed, canceled, failed, rejected).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }

    /// Whether the task ended or waits on the client: the end of a turn.
    pub fn ends_turn(self) -> bool {
        self.is_terminal() || matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// The kebab-case name (`input-required`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
            TaskState::AuthRequired => "auth-required",
            TaskState::Unknown => "unknown",
        }
    }
}

/// A task's state, with an optional message and when it was set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// A message for the client (the final answer, the error, the question).
    /// Shared: a turn's answer is one message, in its history, its final
    /// event and its task's record alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Arc<Message>>,
    /// When the state was set.
    pub timestamp: DateTime<Utc>,
}

impl TaskStatus {
    /// A status set now.
    pub fn new(state: TaskState) -> Self {
        TaskStatus {
            state,
            message: None,
            timestamp: Utc::now(),
        }
    }

    /// Adds a message (a [`Message`] or an `Arc<Message>` shared with the
    /// history).
    pub fn with_message(mut self, message: impl Into<Arc<Message>>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Something a task produced: streamed text, a file, structured data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique id.
    pub artifact_id: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl Artifact {
    /// An artifact with the given id and parts.
    pub fn new(artifact_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Artifact {
            artifact_id: artifact_id.into(),
            name: None,
            description: None,
            parts,
            metadata: Map::new(),
        }
    }

    /// Sets the name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// Applies an `artifact-update` to a list of artifacts: a chunk with
/// `append` extends the artifact of that id (adjacent text is joined),
/// otherwise it replaces it (or adds it).
pub fn fold_artifact(artifacts: &mut Vec<Artifact>, update: &Artifact, append: bool) {
    match artifacts
        .iter_mut()
        .find(|a| a.artifact_id == update.artifact_id)
    {
        Some(existing) if append => {
            Part::extend_joined(&mut existing.parts, update.parts.iter().cloned());
            if existing.name.is_none() {
                existing.name.clone_from(&update.name);
            }
        }
        Some(existing) => *existing = update.clone(),
        None => artifacts.push(update.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_use_kebab_case_and_know_terminality() {
        assert_eq!(
            serde_json::to_string(&TaskState::InputRequired).unwrap(),
            "\"input-required\""
        );
        assert!(TaskState::Canceled.is_terminal());
        assert!(!TaskState::InputRequired.is_terminal());
        assert!(TaskState::InputRequired.ends_turn());
        assert!(!TaskState::Working.ends_turn());
    }
}
