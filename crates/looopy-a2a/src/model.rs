//! Version-neutral views of what A2A exchanges, in looopy-core's vocabulary:
//! the server decodes requests of either version into them and encodes its
//! answers for the request's version; the client does the reverse.

use chrono::{DateTime, Utc};
use looopy_core::{AgentEvent, Artifact, Message, TaskState, TaskStatus};
use serde_json::{Map, Value};

use crate::RpcError;

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

/// A message to send to a remote agent (the client's side of
/// `SendMessage` / `message/send`).
#[derive(Debug, Clone, PartialEq)]
pub struct SendRequest {
    /// The message (its role is sent as the user's).
    pub message: Message,
    /// Continue this conversation.
    pub context_id: Option<String>,
    /// Continue this task (one waiting for input).
    pub task_id: Option<String>,
    /// Wait for the turn to end (default) or return at once.
    pub blocking: bool,
    /// How many history messages the returned task should carry.
    pub history_length: Option<usize>,
    /// Request metadata.
    pub metadata: Map<String, Value>,
}

impl SendRequest {
    /// A blocking request with one user text message.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(Message::user(text))
    }

    /// A blocking request with this message.
    pub fn new(message: Message) -> Self {
        SendRequest {
            message,
            context_id: None,
            task_id: None,
            blocking: true,
            history_length: None,
            metadata: Map::new(),
        }
    }

    /// Continues a conversation.
    pub fn in_context(mut self, context_id: impl Into<String>) -> Self {
        self.context_id = Some(context_id.into());
        self
    }

    /// Continues a task.
    pub fn for_task(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// Returns at once instead of waiting for the turn to end.
    pub fn non_blocking(mut self) -> Self {
        self.blocking = false;
        self
    }
}

/// Send params as the server reads them.
#[derive(Debug, Clone)]
pub(crate) struct SendParams {
    pub(crate) message: WireMessage,
    pub(crate) blocking: bool,
    pub(crate) history_length: Option<usize>,
    pub(crate) metadata: Map<String, Value>,
    /// The push notification config sent with the message, as sent (read
    /// by `server::push`).
    pub(crate) push: Option<Value>,
}

/// A task id with an optional history length.
#[derive(Debug, Clone)]
pub(crate) struct TaskQuery {
    pub(crate) id: String,
    pub(crate) history_length: Option<usize>,
}

/// `ListTasks` params.
#[derive(Debug, Clone)]
pub(crate) struct ListQuery {
    pub(crate) context_id: Option<String>,
    pub(crate) state: Option<TaskState>,
    pub(crate) page_size: usize,
    pub(crate) offset: usize,
    pub(crate) history_length: Option<usize>,
    pub(crate) include_artifacts: bool,
    pub(crate) updated_after: Option<DateTime<Utc>>,
}

/// A requested history length: absent (no limit), 0 (none) or at most N;
/// a negative one is refused (-32602).
pub(crate) fn history_length(n: Option<i64>) -> Result<Option<usize>, RpcError> {
    match n {
        None => Ok(None),
        Some(n) => usize::try_from(n).map(Some).map_err(|_| {
            RpcError::invalid_params(format!("historyLength: must not be negative, got {n}"))
                .with_meta("field", "historyLength")
        }),
    }
}
