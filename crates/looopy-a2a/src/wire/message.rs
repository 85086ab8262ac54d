//! [`WireMessage`]: a message with the A2A ids that travel beside it,
//! as both wire forms carry it.

use looopy_core::Message;

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
