//! Built-in tools with which the model creates, appends to and replaces
//! the conversation's artifacts (off by default:
//! [`AgentBuilder::artifact_tools`](crate::AgentBuilder::artifact_tools)).
//!
//! Each tool writes the [`ArtifactStore`] itself, so that a later call of
//! the same turn reads what an earlier one wrote, and hands the artifact as
//! it now is to the Agent (in [`ToolResult::artifacts`]), which announces
//! it as an `artifact-update` event (whole, `append: false`, also after an
//! append: readers replace their copy) and keeps only its id in the saved
//! tool message. Artifacts hold text: what the model writes.

use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::store::ArtifactStore;
use looopy_core::{
    Artifact, Part, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult, TurnContext,
};
use serde::Deserialize;
use serde_json::json;

/// Name of the tool that creates an artifact.
pub const CREATE_ARTIFACT: &str = "create_artifact";
/// Name of the tool that appends text to an artifact.
pub const APPEND_TO_ARTIFACT: &str = "append_to_artifact";
/// Name of the tool that replaces an artifact's content.
pub const REPLACE_ARTIFACT: &str = "replace_artifact";

/// The artifact tools, on one store.
pub(crate) struct ArtifactTools {
    store: Arc<dyn ArtifactStore>,
}

#[derive(Deserialize)]
struct Create {
    artifact_id: String,
    text: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct Change {
    artifact_id: String,
    text: String,
}

impl ArtifactTools {
    pub(crate) fn new(store: Arc<dyn ArtifactStore>) -> Self {
        ArtifactTools { store }
    }

    async fn run(&self, call: &ToolCall, cx: &TurnContext) -> Result<ToolResult, String> {
        let arguments = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        };
        let bad = |e: serde_json::Error| format!("bad arguments: {e}");
        let (context, task) = (&*cx.context_id, &*cx.task_id);
        let existing = |id: String| async move {
            match self.store.get(context, &id).await {
                Ok(Some(a)) => Ok(a.artifact),
                Ok(None) => Err(format!(
                    "no artifact '{id}': create it with {CREATE_ARTIFACT}"
                )),
                Err(e) => Err(format!("could not read artifact '{id}': {e}")),
            }
        };
        let (artifact, said) = match call.name.as_str() {
            CREATE_ARTIFACT => {
                let a: Create = serde_json::from_str(arguments).map_err(bad)?;
                if a.artifact_id.trim().is_empty() {
                    return Err("artifact_id is empty".into());
                }
                if let Ok(Some(_)) = self.store.get(context, &a.artifact_id).await {
                    return Err(format!(
                        "artifact '{}' exists: use {APPEND_TO_ARTIFACT} or {REPLACE_ARTIFACT}",
                        a.artifact_id
                    ));
                }
                let mut artifact = Artifact::new(a.artifact_id, vec![Part::text(a.text)]);
                artifact.name = a.name;
                artifact.description = a.description;
                self.store
                    .put(context, task, &artifact)
                    .await
                    .map_err(|e| e.to_string())?;
                (artifact, "created")
            }
            APPEND_TO_ARTIFACT => {
                let a: Change = serde_json::from_str(arguments).map_err(bad)?;
                let mut artifact = existing(a.artifact_id).await?;
                let part = Part::text(a.text);
                self.store
                    .append_parts(
                        context,
                        task,
                        &artifact.artifact_id,
                        std::slice::from_ref(&part),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                artifact.parts.push(part);
                (artifact, "appended to")
            }
            REPLACE_ARTIFACT => {
                let a: Change = serde_json::from_str(arguments).map_err(bad)?;
                let mut artifact = existing(a.artifact_id).await?;
                artifact.parts = vec![Part::text(a.text)];
                self.store
                    .put(context, task, &artifact)
                    .await
                    .map_err(|e| e.to_string())?;
                (artifact, "replaced")
            }
            other => return Err(format!("unknown tool '{other}'")),
        };
        let text = format!("Artifact '{}' {said}.", artifact.artifact_id);
        Ok(ToolResult::text(&call.id, text).with_artifact(artifact))
    }
}

#[async_trait]
impl ToolProvider for ArtifactTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        let id = json!({"type": "string", "description": "The artifact's id (letters, digits, '-', '_')."});
        let text = json!({"type": "string"});
        Ok(vec![
            ToolDefinition::new(
                CREATE_ARTIFACT,
                "Creates an artifact of this conversation (a document the user keeps, such as a \
                 report or code) holding the text given.",
                json!({"type": "object", "properties": {
                    "artifact_id": id, "text": text,
                    "name": {"type": "string", "description": "A title."},
                    "description": {"type": "string"}},
                    "required": ["artifact_id", "text"]}),
            ),
            ToolDefinition::new(
                APPEND_TO_ARTIFACT,
                "Appends text to an artifact made before.",
                json!({"type": "object", "properties": {"artifact_id": id, "text": text},
                       "required": ["artifact_id", "text"]}),
            ),
            ToolDefinition::new(
                REPLACE_ARTIFACT,
                "Replaces the whole text of an artifact made before.",
                json!({"type": "object", "properties": {"artifact_id": id, "text": text},
                       "required": ["artifact_id", "text"]}),
            ),
        ])
    }

    /// The same tools in every turn.
    fn tools_are_fixed(&self) -> bool {
        true
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        match self.run(call, cx).await {
            Ok(result) => result,
            Err(message) => ToolResult::error(&call.id, message),
        }
    }
}
