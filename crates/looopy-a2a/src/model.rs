//! Version-neutral views of what A2A exchanges, in looopy-core's vocabulary:
//! the server encodes them for the request's version, the client decodes
//! both versions into them.

use looopy_core::{AgentEvent, Artifact, Message, TaskStatus};
use serde_json::{Map, Value};

/// A task as A2A shows it (`Task` in both versions).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSnapshot {
    /// The task id.
    pub id: String,
    /// The conversation it belongs to.
    pub context_id: String,
    /// Where it stands; the message of a finished turn is the agent's answer
    /// (or its question, when `input-required`).
    pub status: TaskStatus,
    /// What it produced so far (streamed text is one artifact per turn).
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged: the client's inputs and the agent's answers,
    /// oldest first.
    pub history: Vec<Message>,
    /// Metadata.
    pub metadata: Map<String, Value>,
}

impl TaskSnapshot {
    /// The text of the agent's last answer: the status message's text, or
    /// else the text of the artifacts.
    pub fn answer_text(&self) -> String {
        if let Some(m) = &self.status.message {
            let text = m.text();
            if !text.is_empty() {
                return text;
            }
        }
        let mut out = String::new();
        for artifact in &self.artifacts {
            for text in artifact.parts.iter().filter_map(|p| p.as_text()) {
                out.push_str(text);
            }
        }
        out
    }
}

/// What `SendMessage` / `message/send` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum SendResponse {
    /// A task (Looopy servers always answer with one).
    Task(TaskSnapshot),
    /// A direct message, without a task.
    Message(WireMessage),
}

/// One item of a stream (`SendStreamingMessage`, `SubscribeToTask`,
/// `message/stream`, `tasks/resubscribe`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// The task (first item of a task stream).
    Task(TaskSnapshot),
    /// A direct message (the only item of a message stream).
    Message(WireMessage),
    /// A status or artifact update, as the [`AgentEvent`] it was made from:
    /// `status-update` (with `final`: for v1.0 streams, which have no such
    /// flag, `final` is whether the state ends the turn) or `artifact-update`.
    Update(AgentEvent),
}

impl StreamEvent {
    /// Whether this item ends the stream's turn (a final status update, or a
    /// task or message that already ended it).
    pub fn is_final(&self) -> bool {
        match self {
            StreamEvent::Task(t) => t.status.state.is_terminal(),
            StreamEvent::Message(_) => true,
            StreamEvent::Update(e) => e.is_final(),
        }
    }
}

/// A message with the A2A ids that travel beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct WireMessage {
    /// The message. Role `User` is the client, `Assistant` the agent.
    pub message: Message,
    /// The task it belongs to or continues.
    pub task_id: Option<String>,
    /// The conversation.
    pub context_id: Option<String>,
    /// Other tasks it refers to.
    pub reference_task_ids: Vec<String>,
}

impl WireMessage {
    /// A message outside any task or context (the start of a conversation).
    pub fn new(message: Message) -> Self {
        WireMessage {
            message,
            task_id: None,
            context_id: None,
            reference_task_ids: Vec::new(),
        }
    }
}
