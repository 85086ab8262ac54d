//! Tools as the model sees them: [`ToolDefinition`], [`ToolCall`], [`ToolResult`]
//! (in `tool/result.rs`: a result is made of message parts, and a message
//! of tool calls).

mod error;
mod result;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use error::ToolError;
pub use result::ToolResult;

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// Unique name within a turn (`^[a-zA-Z0-9_-]{1,64}$` for most models).
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// Whether running the same call twice has the effect of running it
    /// once. Decides what a resumed turn does with a call of this tool that
    /// was in flight when the process running the turn stopped: an
    /// idempotent tool runs it again, any other tool does not (the model is
    /// told the call was interrupted). For the loop only: it is never sent
    /// to a model. MCP servers declare it with the `idempotentHint`
    /// annotation.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl ToolDefinition {
    /// A definition with the given schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters,
            idempotent: false,
        }
    }

    /// Declares the tool idempotent (or not): see the field of the same name.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// A definition for a tool that takes no arguments.
    pub fn without_parameters(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self::new(name, description, empty_object_schema())
    }
}

/// A call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The model's id for this call; the result quotes it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments exactly as the model sent them: normally a JSON object,
    /// but nothing guarantees it (see [`ToolCall::parsed_arguments`]).
    pub arguments: String,
}

impl ToolCall {
    /// A call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// The arguments as JSON. Empty arguments read as `{}`. Text that is not
    /// JSON reads as `{"_raw": "<text>"}`, so that
    /// events and hooks always have an object to show; the tool still gets
    /// the raw string and decides.
    pub fn parsed_arguments(&self) -> Value {
        if self.arguments.trim().is_empty() {
            return Value::Object(Map::new());
        }
        serde_json::from_str(&self.arguments)
            .unwrap_or_else(|_| serde_json::json!({ "_raw": self.arguments }))
    }
}

/// What a tool result asks of the turn, beyond feeding the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ToolSignal {
    /// The done tool: end the turn, with this final text if given.
    Done {
        /// The final answer; when absent the turn ends with the model's last text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A client tool: the client must run this call and send the
    /// result in its next message; the turn ends `input-required`.
    InputRequired,
}

/// How a tool call failed. Every failed result carries one (see
/// [`ToolResult::failure`]); the model reads the result's text, while
/// events, metrics, traces (`error.type`) and user interfaces read this
/// (what each kind means to a turn: `docs/behaviour.md#tool-errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolFailure {
    /// The call ran past its time limit and was stopped.
    Timeout,
    /// A permission check refused the call; it did not run.
    Denied,
    /// The turn was cancelled while the call ran.
    Cancelled,
    /// The model called a tool that is not offered.
    UnknownTool,
    /// The arguments were not JSON, or not what the tool takes; it did not run.
    BadArguments,
    /// The tool panicked.
    Panicked,
    /// The call was in flight when the process running the turn stopped and
    /// was not run again (see [`ToolResult::interrupted()`]).
    Interrupted,
    /// The tool ran and reported a failure (any other error).
    Failed,
}

impl ToolFailure {
    /// The kind as a short lowercase name, the same as its JSON form
    /// (`timeout`, `denied`, `cancelled`, `unknown_tool`, `bad_arguments`,
    /// `panicked`, `interrupted`, `failed`): the `error.type` of a failed
    /// `execute_tool` span.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFailure::Timeout => "timeout",
            ToolFailure::Denied => "denied",
            ToolFailure::Cancelled => "cancelled",
            ToolFailure::UnknownTool => "unknown_tool",
            ToolFailure::BadArguments => "bad_arguments",
            ToolFailure::Panicked => "panicked",
            ToolFailure::Interrupted => "interrupted",
            ToolFailure::Failed => "failed",
        }
    }

    /// The kind read back from [`as_str`](Self::as_str); `None` for
    /// anything else.
    pub fn parse(name: &str) -> Option<Self> {
        serde_json::from_value(Value::String(name.to_owned())).ok()
    }
}

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who answered a tool call, when it was not a tool run by the loop.
///
/// Stored on the result ([`ToolResult::source`]) and on its tool message
/// ([`Message::source`](crate::Message::source)) as `"source"`: `"client"` or `"synthetic"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResultSource {
    /// A client tool: the client ran the call and sent the result back (or,
    /// on the result that ends the turn, the call waits for the client).
    Client,
    /// Nobody answered the call (a cancelled turn, a client that did not
    /// answer): the Agent wrote this error result, because a provider
    /// refuses a call without a result.
    Synthetic,
}

/// A tool output too long for the history: the history keeps a preview,
/// and the whole output is stored as an artifact the model can read with
/// `read_tool_output` (`looopy_loop::tool_output`).
///
/// Stored as `"cutOutput": {"artifactId", "originalChars"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CutOutput {
    /// The artifact holding the whole output.
    pub artifact_id: String,
    /// The whole output's length, in characters.
    pub original_chars: u64,
}

/// The metadata keys under which results and tool messages stored before
/// the typed fields existed kept them: read once, when such a value is
/// deserialized, and never written.
pub(crate) mod legacy {
    use serde_json::{Map, Value};

    use super::{CutOutput, ResultSource, ToolFailure};

    const IS_ERROR: &str = "isError";
    const FAILURE: &str = "failure";
    const INTERRUPTED: &str = "interrupted";
    const ARTIFACT_IDS: &str = "artifactIds";
    const CLIENT_TOOL: &str = "clientTool";
    const SYNTHETIC_RESULT: &str = "syntheticResult";
    const OUTPUT_ARTIFACT_ID: &str = "outputArtifactId";
    const ORIGINAL_CHARS: &str = "originalChars";

    /// The failure an old tool message recorded (`"isError": true`, with
    /// its kind under `"failure"`, or `"interrupted": true` before kinds
    /// existed), taken out of `metadata`.
    pub(crate) fn failure(metadata: &mut Map<String, Value>) -> Option<ToolFailure> {
        let is_error = metadata.remove(IS_ERROR).and_then(|v| v.as_bool()) == Some(true);
        let kind = metadata
            .remove(FAILURE)
            .and_then(|v| v.as_str().and_then(ToolFailure::parse));
        let interrupted = metadata.remove(INTERRUPTED).and_then(|v| v.as_bool()) == Some(true);
        is_error.then(|| {
            kind.unwrap_or(if interrupted {
                ToolFailure::Interrupted
            } else {
                ToolFailure::Failed
            })
        })
    }

    /// The artifact ids an old tool message listed, taken out of `metadata`.
    pub(crate) fn artifact_ids(metadata: &mut Map<String, Value>) -> Vec<String> {
        match metadata.remove(ARTIFACT_IDS) {
            Some(Value::Array(ids)) => ids
                .into_iter()
                .filter_map(|id| match id {
                    Value::String(id) => Some(id),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Who answered, as an old result or message marked it.
    pub(crate) fn source(metadata: &mut Map<String, Value>) -> Option<ResultSource> {
        let client = metadata.remove(CLIENT_TOOL).and_then(|v| v.as_bool()) == Some(true);
        let synthetic = metadata.remove(SYNTHETIC_RESULT).and_then(|v| v.as_bool()) == Some(true);
        if synthetic {
            Some(ResultSource::Synthetic)
        } else {
            client.then_some(ResultSource::Client)
        }
    }

    /// The cut output an old result or message recorded.
    pub(crate) fn cut_output(metadata: &mut Map<String, Value>) -> Option<CutOutput> {
        let id = match metadata.get(OUTPUT_ARTIFACT_ID) {
            Some(Value::String(_)) => metadata.remove(OUTPUT_ARTIFACT_ID),
            _ => None,
        };
        let Some(Value::String(artifact_id)) = id else {
            return None;
        };
        let original_chars = metadata
            .remove(ORIGINAL_CHARS)
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        Some(CutOutput {
            artifact_id,
            original_chars,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unparsable_arguments_read_as_raw() {
        let call = ToolCall::new("1", "t", "{not json");
        assert_eq!(
            call.parsed_arguments(),
            serde_json::json!({"_raw": "{not json"})
        );
        assert_eq!(
            ToolCall::new("1", "t", "").parsed_arguments(),
            serde_json::json!({})
        );
        assert_eq!(
            ToolCall::new("1", "t", r#"{"a":1}"#).parsed_arguments()["a"],
            1
        );
    }

    #[test]
    fn the_idempotent_flag_is_camel_case_and_only_written_when_set() {
        let plain = ToolDefinition::without_parameters("t", "d");
        assert!(!plain.idempotent);
        let v = serde_json::to_value(&plain).unwrap();
        assert!(v.get("idempotent").is_none(), "{v}");
        let flagged = plain.clone().idempotent(true);
        let v = serde_json::to_value(&flagged).unwrap();
        assert_eq!(v["idempotent"], true);
        assert_eq!(
            serde_json::from_value::<ToolDefinition>(v).unwrap(),
            flagged
        );
        let read: ToolDefinition =
            serde_json::from_value(serde_json::json!({"name": "x"})).unwrap();
        assert!(!read.idempotent);
    }
}
