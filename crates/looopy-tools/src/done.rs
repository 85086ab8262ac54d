//! [`DoneTool`]: the done tool.

use async_trait::async_trait;
use looopy_core::{
    ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult, ToolSignal, TurnContext,
};
use serde_json::{Value, json};

/// The default name of the done tool.
pub const DONE_TOOL_NAME: &str = "done";

/// A provider of one tool, `done` by default, that the model calls to end the
/// turn. Its argument `message` is the final answer; the result carries
/// [`ToolSignal::Done`] with it, and the loop ends the turn.
///
/// A missing or non-string `message` is tolerated (the signal then has no
/// message and the turn ends with the model's last text); arguments that are
/// not JSON are too, so that the model can always finish.
#[derive(Debug, Clone)]
pub struct DoneTool {
    name: String,
    description: String,
}

impl Default for DoneTool {
    fn default() -> Self {
        DoneTool {
            name: DONE_TOOL_NAME.to_owned(),
            description: "Call this when the task is complete. `message` is the final answer \
                          for the user."
                .to_owned(),
        }
    }
}

impl DoneTool {
    /// The `done` tool with the default description.
    pub fn new() -> Self {
        Self::default()
    }

    /// Renames the tool.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Replaces the description the model reads.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The tool's definition.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            self.name.clone(),
            self.description.clone(),
            json!({
                "type": "object",
                "properties": {
                    "message": {
                        "type": "string",
                        "description": "The final answer for the user."
                    }
                },
                "required": ["message"]
            }),
        )
        // It only asks the turn to end: running it again changes nothing.
        .idempotent(true)
    }
}

#[async_trait]
impl ToolProvider for DoneTool {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![self.definition()])
    }

    /// One tool, made when the provider is built.
    fn tools_are_fixed(&self) -> bool {
        true
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        if call.name != self.name {
            let error = ToolError::UnknownTool {
                name: call.name.clone(),
            };
            return ToolResult::from_error(call.id.clone(), &error);
        }
        let message = match call.parsed_arguments().get("message") {
            Some(Value::String(text)) => Some(text.clone()),
            _ => None,
        };
        ToolResult::text(call.id.clone(), "Done.").with_signal(ToolSignal::Done { message })
    }
}
