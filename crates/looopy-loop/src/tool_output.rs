//! Tool-output management: a tool result larger
//! than a limit is stored as an artifact; the model sees a preview and a
//! reference, and reads the rest on demand with the `read_tool_output` tool.
//! The history stays small however much a tool returns.
//!
//! [`ToolOutputCache`] is both a [`Hook`] (it shrinks results after each tool
//! call) and a [`ToolProvider`] (it offers `read_tool_output`);
//! [`AgentLoopBuilder::tool_output_cache`](crate::AgentLoopBuilder::tool_output_cache)
//! registers it as both.
//!
//! The loop offers `read_tool_output` to the model only while the turn's
//! history holds a cut output ([`holds_cut_output`]): until then the tool
//! could read nothing, and its definition would cost every model call
//! about a hundred prompt tokens. A call to it is still run when it is not
//! offered (a model that asks anyway is answered, not refused).

use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::store::ArtifactStore;
use looopy_core::{
    Artifact, CutOutput, History, Part, Role, ToolCall, ToolDefinition, ToolError, ToolProvider,
    ToolResult, TurnContext,
};
use serde_json::{Value, json};

use crate::hooks::{Hook, HookContext, HookError, HookPoints};

/// The name of the retrieval tool.
pub const READ_TOOL_OUTPUT: &str = "read_tool_output";

/// Whether `history` holds a tool result that was cut (one the model can
/// read the rest of with `read_tool_output`: its message's
/// [`cut_output`](looopy_core::Message::cut_output) is set). Checks one
/// field of each message: far less than writing the history into a request.
pub fn holds_cut_output(history: &History) -> bool {
    history
        .iter()
        .any(|m| m.role == Role::Tool && m.cut_output.is_some())
}

/// Stores large tool results as artifacts and serves them back in pages.
#[derive(Clone)]
pub struct ToolOutputCache {
    store: Arc<dyn ArtifactStore>,
    max_chars: usize,
    preview_chars: usize,
}

impl ToolOutputCache {
    /// Results longer than `max_chars` characters are stored; the model sees
    /// the first `preview_chars` of them.
    pub fn new(store: Arc<dyn ArtifactStore>, max_chars: usize, preview_chars: usize) -> Self {
        ToolOutputCache {
            store,
            max_chars: max_chars.max(1),
            preview_chars: preview_chars.min(max_chars),
        }
    }

    /// The artifact id a call's full output is stored under.
    pub fn artifact_id(tool_call_id: &str) -> String {
        format!("tool-output-{tool_call_id}")
    }
}

/// `chars` characters of `text` starting at character `offset`.
fn char_slice(text: &str, offset: usize, chars: usize) -> &str {
    let start = text
        .char_indices()
        .nth(offset)
        .map_or(text.len(), |(i, _)| i);
    let rest = &text[start..];
    let end = rest
        .char_indices()
        .nth(chars)
        .map_or(rest.len(), |(i, _)| i);
    &rest[..end]
}

/// Whether a result is plain text no longer than `max_chars` bytes: it has
/// at most that many characters, so it fits, measured without copying its
/// text (the hook runs after every tool call).
fn fits_without_copy(result: &ToolResult, max_chars: usize) -> bool {
    let mut bytes = 0;
    for part in &result.content {
        match part {
            Part::Text { text } => bytes += text.len(),
            _ => return false,
        }
    }
    bytes <= max_chars
}

#[async_trait]
impl Hook for ToolOutputCache {
    fn name(&self) -> &str {
        "tool-output-cache"
    }

    fn points(&self) -> HookPoints {
        HookPoints::AFTER_TOOL
    }

    async fn after_tool(
        &self,
        cx: &HookContext,
        call: &ToolCall,
        result: &mut ToolResult,
    ) -> Result<(), HookError> {
        if call.name == READ_TOOL_OUTPUT || fits_without_copy(result, self.max_chars) {
            return Ok(());
        }
        let text = result.text_content();
        let total = text.chars().count();
        if total <= self.max_chars {
            return Ok(());
        }
        let id = Self::artifact_id(&call.id);
        let artifact = Artifact::new(&id, std::mem::take(&mut result.content))
            .with_name(format!("output of {}", call.name));
        self.store
            .put(&cx.turn.context_id, &cx.turn.task_id, &artifact)
            .await
            .map_err(|e| {
                HookError::new(format!(
                    "could not store the output of '{}': {e}",
                    call.name
                ))
            })?;
        let preview = char_slice(&text, 0, self.preview_chars);
        result.content = vec![Part::text(format!(
            "{preview}\n[Output truncated: {total} characters in all. The full output is stored as \
             artifact '{id}'. Call {READ_TOOL_OUTPUT} with {{\"artifact_id\": \"{id}\", \"offset\": \
             {}, \"limit\": {}}} to read more.]",
            self.preview_chars, self.max_chars
        ))];
        result.cut_output = Some(CutOutput {
            artifact_id: id,
            original_chars: total as u64,
        });
        Ok(())
    }
}

#[async_trait]
impl ToolProvider for ToolOutputCache {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::new(
            READ_TOOL_OUTPUT,
            "Reads a page of a tool output that was too long to show in full.",
            json!({
                "type": "object",
                "properties": {
                    "artifact_id": {"type": "string", "description": "The artifact named in the truncated output."},
                    "offset": {"type": "integer", "minimum": 0, "description": "First character to read."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many characters to read."}
                },
                "required": ["artifact_id"]
            }),
        )
        // It only reads: a resumed turn may run it again.
        .idempotent(true)])
    }

    /// Its one tool, always listed (the loop offers it to the model once a
    /// cut output is in the history).
    fn tools_are_fixed(&self) -> bool {
        true
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        let args = call.parsed_arguments();
        let Some(id) = args.get("artifact_id").and_then(Value::as_str) else {
            return ToolResult::error(&call.id, "missing string argument 'artifact_id'");
        };
        let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(self.max_chars, |l| (l as usize).clamp(1, self.max_chars));
        let stored = match self.store.get(&cx.context_id, id).await {
            Ok(Some(stored)) => stored,
            Ok(None) => {
                return ToolResult::error(&call.id, format!("no stored tool output '{id}'"));
            }
            Err(e) => return ToolResult::error(&call.id, format!("could not read '{id}': {e}")),
        };
        let full = ToolResult {
            content: stored.artifact.parts,
            ..ToolResult::text(&call.id, "")
        }
        .text_content();
        let total = full.chars().count();
        let page = char_slice(&full, offset, limit);
        let end = (offset + page.chars().count()).min(total);
        ToolResult::text(
            &call.id,
            format!("{page}\n[characters {offset}..{end} of {total}]"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::char_slice;

    #[test]
    fn slices_by_characters_not_bytes() {
        assert_eq!(char_slice("héllo wörld", 1, 4), "éllo");
        assert_eq!(char_slice("abc", 5, 2), "");
        assert_eq!(char_slice("abc", 1, 10), "bc");
    }
}
