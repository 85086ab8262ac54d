//! The tools a client declares for a turn, read from message metadata.

use std::collections::HashSet;

use crate::context::TurnContext;
use crate::message::{Message, Part};
use crate::tool::{ResultSource, ToolCall, ToolDefinition, ToolError, ToolResult, ToolSignal};
use crate::tool_provider::ToolProvider;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ClientToolResult;

/// The message-metadata key under which a client declares its tools.
pub const CLIENT_TOOLS_KEY: &str = "clientTools";

/// A client's tool declaration could not be read: not an array, an entry
/// that is not a tool definition, an empty or repeated name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid client tool declaration: {message}")]
pub struct InvalidClientTools {
    /// What is wrong, naming the entry (`tool #2: missing field `name``).
    pub message: String,
}

impl InvalidClientTools {
    fn new(message: impl Into<String>) -> Self {
        InvalidClientTools {
            message: message.into(),
        }
    }
}

/// A provider of the tools a client declared for this turn.
///
/// Executing one does not run anything: the result carries
/// [`ToolSignal::InputRequired`] and a [`PendingClientCall`] as a data part,
/// the loop ends the turn `input-required`, and the client sends the outcome
/// in its next message (see [`ClientToolResult`]).
///
/// Client tools are listed as idempotent: executing one only prepares the
/// question to the client, which is asked when the turn ends, so a turn
/// resumed after a crash may execute it again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientTools {
    tools: Vec<ToolDefinition>,
}

impl ClientTools {
    /// The given tools. A later definition with a name already given
    /// replaces the earlier one.
    pub fn new(tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        let mut out: Vec<ToolDefinition> = Vec::new();
        for tool in tools {
            match out.iter_mut().find(|t| t.name == tool.name) {
                Some(slot) => *slot = tool,
                None => out.push(tool),
            }
        }
        ClientTools { tools: out }
    }

    /// Reads a JSON array of declarations. Each is either a
    /// [`ToolDefinition`] (`{"name", "description", "parameters"}`) or the
    /// OpenAI form `{"type": "function", "function": {...}}`. Names must be
    /// non-empty and distinct.
    pub fn from_value(value: &Value) -> Result<Self, InvalidClientTools> {
        let Value::Array(items) = value else {
            return Err(InvalidClientTools::new(
                "expected an array of tool definitions",
            ));
        };
        let mut tools = Vec::with_capacity(items.len());
        let mut seen = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let item = match item.get("function") {
                Some(function) if item.get("type").and_then(Value::as_str) == Some("function") => {
                    function
                }
                _ => item,
            };
            let tool: ToolDefinition = serde_json::from_value(item.clone())
                .map_err(|e| InvalidClientTools::new(format!("tool #{i}: {e}")))?;
            if tool.name.trim().is_empty() {
                return Err(InvalidClientTools::new(format!("tool #{i}: empty name")));
            }
            if !seen.insert(tool.name.clone()) {
                return Err(InvalidClientTools::new(format!(
                    "duplicate tool name '{}'",
                    tool.name
                )));
            }
            tools.push(tool);
        }
        Ok(ClientTools { tools })
    }

    /// Reads the declarations under [`CLIENT_TOOLS_KEY`] in message (or
    /// request) metadata; none when the key is absent.
    pub fn from_metadata(metadata: &Map<String, Value>) -> Result<Self, InvalidClientTools> {
        match metadata.get(CLIENT_TOOLS_KEY) {
            None | Some(Value::Null) => Ok(ClientTools::default()),
            Some(value) => Self::from_value(value),
        }
    }

    /// Reads the declarations in a message's metadata.
    pub fn from_message(message: &Message) -> Result<Self, InvalidClientTools> {
        Self::from_metadata(&message.metadata)
    }

    /// The declared tools.
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.tools
    }

    /// Whether no tools were declared.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Whether a tool of this name was declared.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }
}

#[async_trait]
impl ToolProvider for ClientTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(self
            .tools
            .iter()
            .map(|t| t.clone().idempotent(true))
            .collect())
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        if !self.contains(&call.name) {
            let error = ToolError::UnknownTool {
                name: call.name.clone(),
            };
            return ToolResult::from_error(call.id.clone(), &error);
        }
        let pending = PendingClientCall {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.parsed_arguments(),
        };
        ToolResult {
            content: vec![pending.to_part()],
            ..ToolResult::text(call.id.clone(), "")
        }
        .with_signal(ToolSignal::InputRequired)
        .with_source(ResultSource::Client)
    }
}

/// A call the client must run: the data part of a client tool's result.
///
/// Wire form: `{"toolCallId": "...", "name": "...", "arguments": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingClientCall {
    /// The model's id for the call; the client quotes it in its result.
    pub tool_call_id: String,
    /// The tool.
    pub name: String,
    /// The arguments, as JSON (see [`ToolCall::parsed_arguments`]).
    pub arguments: Value,
}

impl PendingClientCall {
    /// The data part that carries this call.
    pub fn to_part(&self) -> Part {
        Part::data(serde_json::to_value(self).unwrap_or(Value::Null))
    }

    /// Reads a pending call from a data part.
    pub fn from_part(part: &Part) -> Option<Self> {
        match part {
            Part::Data { data } => serde_json::from_value(data.clone()).ok(),
            _ => None,
        }
    }

    /// The pending calls among a tool result's parts.
    pub fn from_result(result: &ToolResult) -> Vec<Self> {
        result.content.iter().filter_map(Self::from_part).collect()
    }
}

/// The client tool results in a message, in order.
pub fn client_results(message: &Message) -> Vec<ClientToolResult> {
    message
        .parts
        .iter()
        .filter_map(ClientToolResult::from_part)
        .collect()
}

/// Splits a client's message into the tool messages for the results it
/// carries and what is left of it (`None` when it held only results).
pub fn split_client_results(message: Message) -> (Vec<Message>, Option<Message>) {
    let (results, rest) = super::split_results(message);
    (
        results
            .into_iter()
            .map(ClientToolResult::into_message)
            .collect(),
        rest,
    )
}
