//! Tools as the model sees them: [`ToolDefinition`], [`ToolCall`], [`ToolResult`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Message, Part, Role};

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
    /// JSON reads as `{"_raw": "<text>"}` (seed 003, section 4.2), so that
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
pub enum ToolSignal {
    /// The done tool (seed 003): end the turn, with this final text if given.
    Done {
        /// The final answer; when absent the turn ends with the model's last text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A client tool (seed 001): the client must run this call and send the
    /// result in its next message; the turn ends `input-required`.
    InputRequired,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The call this answers.
    pub tool_call_id: String,
    /// What the model gets to read.
    pub content: Vec<Part>,
    /// Whether the call failed. The model still sees the content.
    #[serde(default)]
    pub is_error: bool,
    /// A request to the turn (done, input required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<ToolSignal>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// The call did not finish: it was in flight when the process running
    /// the turn stopped, and the resumed turn did not run it again (its tool
    /// is not idempotent). Such a result is an error made by the loop, not
    /// by the tool (see [`ToolResult::interrupted()`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub interrupted: bool,
}

impl ToolResult {
    /// A successful text result.
    pub fn text(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            tool_call_id: tool_call_id.into(),
            content: vec![Part::text(text)],
            is_error: false,
            signal: None,
            metadata: Map::new(),
            interrupted: false,
        }
    }

    /// A successful structured result: the model reads it as JSON text.
    pub fn json(tool_call_id: impl Into<String>, value: &Value) -> Self {
        Self::text(tool_call_id, value.to_string())
    }

    /// A failed call. The text is prefixed with `Error: ` unless it already is.
    pub fn error(tool_call_id: impl Into<String>, message: impl AsRef<str>) -> Self {
        let message = message.as_ref();
        let text = if message.starts_with("Error:") {
            message.to_owned()
        } else {
            format!("Error: {message}")
        };
        ToolResult {
            is_error: true,
            ..Self::text(tool_call_id, text)
        }
    }

    /// The result of a call that was in flight when the process running the
    /// turn stopped, and that the resumed turn does not run again because
    /// its tool `tool` is not idempotent: an error result, marked
    /// [`interrupted`](#structfield.interrupted), telling the model that the
    /// call may or may not have taken effect.
    pub fn interrupted(tool_call_id: impl Into<String>, tool: &str) -> Self {
        ToolResult {
            interrupted: true,
            ..Self::error(
                tool_call_id,
                format!(
                    "the call was interrupted by a restart and not retried: tool '{tool}' \
                     is not declared idempotent, so running it again could repeat its effects. \
                     It may or may not have taken effect; check before calling it again."
                ),
            )
        }
    }

    /// Adds a signal to the turn.
    pub fn with_signal(mut self, signal: ToolSignal) -> Self {
        self.signal = Some(signal);
        self
    }

    /// The concatenated text of the content's text parts.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            match part {
                Part::Text { text } => out.push_str(text),
                Part::Data { data } => out.push_str(&data.to_string()),
                Part::File { file } => {
                    out.push_str(&format!(
                        "[file {}]",
                        file.name.as_deref().or(file.uri.as_deref()).unwrap_or("")
                    ));
                }
            }
        }
        out
    }

    /// The tool message that carries this result in the history.
    pub fn into_message(self) -> Message {
        let mut message = Message::with_parts(Role::Tool, self.content);
        message.tool_call_id = Some(self.tool_call_id);
        message.metadata = self.metadata;
        if self.is_error {
            message.metadata.insert("isError".into(), Value::Bool(true));
        }
        if self.interrupted {
            message
                .metadata
                .insert("interrupted".into(), Value::Bool(true));
        }
        message
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
    fn error_results_are_prefixed_once_and_marked() {
        let r = ToolResult::error("c", "boom");
        assert_eq!(r.text_content(), "Error: boom");
        assert_eq!(
            ToolResult::error("c", "Error: x").text_content(),
            "Error: x"
        );
        let m = r.into_message();
        assert_eq!(m.role, Role::Tool);
        assert_eq!(m.tool_call_id.as_deref(), Some("c"));
        assert!(m.is_error());
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

    #[test]
    fn an_interrupted_result_is_an_error_marked_interrupted() {
        let r = ToolResult::interrupted("c1", "send_mail");
        assert!(r.is_error && r.interrupted);
        let text = r.text_content();
        assert!(
            text.starts_with("Error: the call was interrupted by a restart and not retried"),
            "{text}"
        );
        assert!(text.contains("'send_mail'"), "{text}");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["interrupted"], true);
        assert!(
            serde_json::to_value(ToolResult::text("c", "x"))
                .unwrap()
                .get("interrupted")
                .is_none()
        );
        let m = r.into_message();
        assert!(m.is_error());
        assert_eq!(m.metadata["interrupted"], true);
    }
}
