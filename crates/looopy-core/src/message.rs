//! The conversation model: [`Message`], [`Role`] and [`Part`].
//!
//! Serde forms are stable: they are persisted by the stores and sent over the
//! wire. Field names are `camelCase`, like the A2A protocol; enums are tagged
//! with `kind` (parts) or written in lower case (roles).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approval::ApprovalRequest;
use crate::tool::{ToolCall, ToolFailure};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model. Looopy injects the configured system prompt
    /// at call time; it is never stored in the history.
    System,
    /// The human or client agent.
    User,
    /// The model.
    Assistant,
    /// The result of a tool call (`tool_call_id` names the call).
    Tool,
}

/// A file carried by a [`Part::File`]: either a URI or inline bytes (base64).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    /// File name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// MIME type, such as `image/png`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Where the file lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The file's bytes, base64-encoded (standard alphabet, padded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Structured data.
    Data {
        /// Any JSON value.
        data: Value,
    },
    /// A file, by reference or inline.
    File {
        /// The file. Boxed: a part is as small as a text part (40 bytes
        /// rather than 96) in every message, artifact and event, and files
        /// are the rare part.
        file: Box<FileContent>,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }

    /// A data part.
    pub fn data(data: Value) -> Self {
        Part::Data { data }
    }

    /// A file part.
    pub fn file(file: FileContent) -> Self {
        Part::File {
            file: Box::new(file),
        }
    }

    /// The text of a text part, `None` for other parts.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text { text } => Some(text),
            _ => None,
        }
    }

    /// Adds `more` after `parts`, each text part joined to a text part
    /// before it: streamed text comes as many small parts, and what they
    /// mean is their concatenation (one part holds it in one allocation).
    pub fn extend_joined(parts: &mut Vec<Part>, more: impl IntoIterator<Item = Part>) {
        for part in more {
            match (parts.last_mut(), part) {
                (Some(Part::Text { text }), Part::Text { text: more }) => text.push_str(&more),
                (_, part) => parts.push(part),
            }
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique id (A2A `messageId`). Generated when not given.
    #[serde(default = "new_message_id")]
    pub message_id: String,
    /// Who wrote it.
    pub role: Role,
    /// The content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Tool calls requested by the model (assistant messages only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call this message answers (tool messages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The approval requests of this message's tool calls, while they wait
    /// for a person's decision (assistant messages only; see
    /// [`crate::approval`]). Stored with the conversation as
    /// `approvalRequests`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approval_requests: Vec<ApprovalRequest>,
    /// Free-form metadata (for instance `"isError": true` on a failed tool result).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

fn new_message_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl Message {
    /// A message with one text part.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Message {
            message_id: new_message_id(),
            role,
            parts: vec![Part::text(text)],
            tool_calls: Vec::new(),
            tool_call_id: None,
            approval_requests: Vec::new(),
            metadata: Map::new(),
        }
    }

    /// A message with the given parts and nothing else.
    pub fn with_parts(role: Role, parts: Vec<Part>) -> Self {
        Message {
            message_id: new_message_id(),
            role,
            parts,
            tool_calls: Vec::new(),
            tool_call_id: None,
            approval_requests: Vec::new(),
            metadata: Map::new(),
        }
    }

    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, text)
    }

    /// An assistant message with one text part.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, text)
    }

    /// A system message with one text part.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, text)
    }

    /// The concatenated text of all text parts.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for text in self.parts.iter().filter_map(Part::as_text) {
            out.push_str(text);
        }
        out
    }

    /// Whether this message is the result of a tool call that failed.
    pub fn is_error(&self) -> bool {
        self.metadata
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// How the tool call this message answers failed: the kind stored
    /// under `"failure"`, else [`ToolFailure::Interrupted`] for a message
    /// stored with `"interrupted": true` before kinds existed, else
    /// [`ToolFailure::Failed`] for any other error. `None` when
    /// [`is_error`](Self::is_error) is false.
    pub fn tool_failure(&self) -> Option<ToolFailure> {
        if !self.is_error() {
            return None;
        }
        let stored = self
            .metadata
            .get(crate::tool::TOOL_FAILURE_KEY)
            .and_then(Value::as_str)
            .and_then(ToolFailure::parse);
        let interrupted = self.metadata.get("interrupted").and_then(Value::as_bool) == Some(true);
        Some(stored.unwrap_or(if interrupted {
            ToolFailure::Interrupted
        } else {
            ToolFailure::Failed
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_serde_form_is_stable() {
        let mut m = Message::user("hi");
        m.message_id = "m1".into();
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]})
        );
        let back: Message = serde_json::from_value(json).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn text_joins_text_parts_only() {
        let m = Message::with_parts(
            Role::Assistant,
            vec![
                Part::text("a"),
                Part::data(serde_json::json!(1)),
                Part::text("b"),
            ],
        );
        assert_eq!(m.text(), "ab");
    }
}
