//! The conversation model: [`Message`], [`Role`] and [`Part`].
//!
//! Serde forms are stable: they are persisted by the stores and sent over the
//! wire. Field names are `camelCase`, like the A2A protocol; enums are tagged
//! with `kind` (parts) or written in lower case (roles).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approval::ApprovalRequest;
use crate::tool::{CutOutput, ResultSource, ToolCall, ToolFailure, legacy};

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

/// A file carried by a [`Part::File`]: a URI, inline bytes (base64), or a
/// reference to a blob store ([`blob`](Self::blob)) for content too large
/// to keep inline.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
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
    /// Where the file's bytes are kept when they are in a blob store
    /// rather than inline (`docs/artifacts.md`): store, key, size, media
    /// type and SHA-256. Stored with the part as `blob`; the blob is
    /// written before the part that references it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<crate::BlobRef>,
}

impl FileContent {
    /// A file kept in a blob store: its media type from the reference,
    /// `name` when known.
    pub fn from_blob(blob: crate::BlobRef, name: Option<String>) -> Self {
        FileContent {
            name,
            mime_type: Some(blob.media_type.clone()),
            uri: None,
            bytes: None,
            blob: Some(blob),
        }
    }
}

/// What a model thought before answering, as its provider returned it
/// (a [`Part::Reasoning`] of an assistant message).
///
/// Kept in the history so that the next call of the turn can send it back:
/// some providers need it (Anthropic's thinking blocks with their signature
/// before a tool result, Gemini's thought signatures, the OpenAI Responses
/// API's encrypted reasoning). Only the provider named in
/// [`provider`](Self::provider) may be sent it, byte for byte; every other
/// provider leaves it out of its requests. It is never shown to A2A clients.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reasoning {
    /// The provider that made it, as its
    /// [`provider_name`](crate::LlmProvider::provider_name) says (`anthropic`).
    pub provider: String,
    /// The reasoning text, or a summary of it (see [`summary`](Self::summary));
    /// empty when the provider did not show it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Whether [`text`](Self::text) is a summary of the reasoning rather
    /// than the reasoning itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summary: bool,
    /// The provider's opaque proof or encrypted payload (Anthropic's
    /// `signature`, Gemini's `thoughtSignature`, OpenAI's
    /// `encrypted_content`), to be sent back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Reasoning the provider withheld, as the encrypted data it gave in its
    /// place (Anthropic's `redacted_thinking`); `None` when not redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
    /// The provider's id of this reasoning, when it names one (an OpenAI
    /// Responses reasoning item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Reasoning {
    /// Reasoning `text` made by `provider`, with nothing else.
    pub fn new(provider: impl Into<String>, text: impl Into<String>) -> Self {
        Reasoning {
            provider: provider.into(),
            text: text.into(),
            ..Default::default()
        }
    }

    /// Sets the signature (or encrypted payload).
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// Whether the provider withheld the reasoning (its data is in
    /// [`redacted`](Self::redacted)).
    pub fn is_redacted(&self) -> bool {
        self.redacted.is_some()
    }

    /// Whether `provider` made this reasoning, and so may be sent it back.
    pub fn is_from(&self, provider: &str) -> bool {
        self.provider == provider
    }
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
    /// The model's reasoning (assistant messages only): sent back only to
    /// the provider that made it, never shown to A2A clients. Boxed like
    /// files.
    Reasoning {
        /// The reasoning.
        reasoning: Box<Reasoning>,
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

    /// A reasoning part.
    pub fn reasoning(reasoning: Reasoning) -> Self {
        Part::Reasoning {
            reasoning: Box::new(reasoning),
        }
    }

    /// The reasoning of a reasoning part, `None` for other parts.
    pub fn as_reasoning(&self) -> Option<&Reasoning> {
        match self {
            Part::Reasoning { reasoning } => Some(reasoning),
            _ => None,
        }
    }

    /// Whether this is a reasoning part.
    pub fn is_reasoning(&self) -> bool {
        matches!(self, Part::Reasoning { .. })
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
///
/// What Looopy itself records about a message is in typed fields (a tool
/// message's [`failure`](Self::failure), [`artifact_ids`](Self::artifact_ids),
/// [`source`](Self::source), [`cut_output`](Self::cut_output); an assistant
/// message's [`approval_requests`](Self::approval_requests)); `metadata`
/// holds the user's and the tools' own entries only. Tool messages stored
/// before those fields existed kept them in `metadata` (`isError`,
/// `failure`, `interrupted`, `artifactIds`, `clientTool`, `syntheticResult`,
/// `outputArtifactId`, `originalChars`): reading such a message moves them
/// into the fields, so that a stored conversation resumes the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "MessageWire")]
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
    /// How the call this message answers failed; `None` for a success
    /// (tool messages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ToolFailure>,
    /// Who answered the call, when it was not a tool run by the loop (tool
    /// messages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ResultSource>,
    /// The ids of the artifacts the call's result made: the history keeps
    /// the ids, the artifact store the artifacts (tool messages only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifact_ids: Vec<String>,
    /// Where the whole output of a result cut to a preview is stored (tool
    /// messages only). Boxed: few messages have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_output: Option<Box<CutOutput>>,
    /// The user's and the tools' own entries; Looopy gives them no meaning.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// The serde form of [`Message`] as read: the same fields, and the
/// migration of the metadata entries that held the typed ones before.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageWire {
    #[serde(default = "new_message_id")]
    message_id: String,
    role: Role,
    #[serde(default)]
    parts: Vec<Part>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    approval_requests: Vec<ApprovalRequest>,
    #[serde(default)]
    failure: Option<ToolFailure>,
    #[serde(default)]
    source: Option<ResultSource>,
    #[serde(default)]
    artifact_ids: Vec<String>,
    #[serde(default)]
    cut_output: Option<Box<CutOutput>>,
    #[serde(default)]
    metadata: Map<String, Value>,
}

impl From<MessageWire> for Message {
    fn from(w: MessageWire) -> Self {
        let mut m = Message {
            message_id: w.message_id,
            role: w.role,
            parts: w.parts,
            tool_calls: w.tool_calls,
            tool_call_id: w.tool_call_id,
            approval_requests: w.approval_requests,
            failure: w.failure,
            source: w.source,
            artifact_ids: w.artifact_ids,
            cut_output: w.cut_output,
            metadata: w.metadata,
        };
        // Only tool messages ever carried these entries; any other
        // message's metadata is the user's, whatever its keys.
        if m.role == Role::Tool && !m.metadata.is_empty() {
            let metadata = &mut m.metadata;
            if let Some(failure) = legacy::failure(metadata) {
                m.failure = m.failure.or(Some(failure));
            }
            if m.artifact_ids.is_empty() {
                m.artifact_ids = legacy::artifact_ids(metadata);
            }
            if let Some(source) = legacy::source(metadata) {
                m.source = m.source.or(Some(source));
            }
            if let Some(cut) = legacy::cut_output(metadata) {
                m.cut_output = m.cut_output.take().or(Some(Box::new(cut)));
            }
        }
        m
    }
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
            failure: None,
            source: None,
            artifact_ids: Vec::new(),
            cut_output: None,
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
            failure: None,
            source: None,
            artifact_ids: Vec::new(),
            cut_output: None,
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

    /// The reasoning parts of this message, in order.
    pub fn reasoning(&self) -> impl Iterator<Item = &Reasoning> {
        self.parts.iter().filter_map(Part::as_reasoning)
    }

    /// This message without its reasoning parts (what may be shown outside
    /// the agent).
    pub fn without_reasoning(&self) -> Message {
        let mut shown = self.clone();
        shown.parts.retain(|p| !p.is_reasoning());
        shown
    }

    /// Whether this message is the result of a tool call that failed.
    pub fn is_error(&self) -> bool {
        self.failure.is_some()
    }

    /// How the tool call this message answers failed ([`failure`](Self::failure));
    /// `None` when it did not.
    pub fn tool_failure(&self) -> Option<ToolFailure> {
        self.failure
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
    fn reasoning_part_serde_form_is_stable() {
        let part = Part::reasoning(Reasoning::new("anthropic", "hm").with_signature("sig=="));
        let json = serde_json::to_value(&part).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind":"reasoning","reasoning":{"provider":"anthropic","text":"hm","signature":"sig=="}})
        );
        let back: Part = serde_json::from_value(json).unwrap();
        assert_eq!(back, part);
        let redacted = Reasoning {
            provider: "anthropic".into(),
            redacted: Some("opaque".into()),
            ..Default::default()
        };
        assert!(redacted.is_redacted());
        assert!(redacted.is_from("anthropic") && !redacted.is_from("openai"));
    }

    #[test]
    fn text_and_shown_form_leave_reasoning_out() {
        let m = Message::with_parts(
            Role::Assistant,
            vec![
                Part::reasoning(Reasoning::new("p", "secret")),
                Part::text("answer"),
            ],
        );
        assert_eq!(m.text(), "answer");
        assert_eq!(m.reasoning().count(), 1);
        assert_eq!(m.without_reasoning().parts, vec![Part::text("answer")]);
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
