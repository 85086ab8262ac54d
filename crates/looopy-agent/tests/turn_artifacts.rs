//! Tools see the conversation's artifacts through their context.
#![allow(clippy::unwrap_used)]

use crate::support;

use async_trait::async_trait;
use looopy_core::{
    Artifact, LlmResponse, Part, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
use looopy_testkit::ScriptedLlm;
use support::*;

/// `list_artifacts` answers the ids of the artifacts its context shows,
/// and the text of `notes`.
struct Reader;

#[async_trait]
impl ToolProvider for Reader {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::without_parameters(
            "list_artifacts",
            "lists the conversation's artifacts",
        )])
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        let Some(view) = &cx.artifacts else {
            return ToolResult::error(&call.id, "no artifacts in the context");
        };
        let ids: Vec<String> = view
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.artifact.artifact_id)
            .collect();
        let notes = view
            .get("notes")
            .await
            .unwrap()
            .map(|a| a.artifact.parts[0].as_text().unwrap_or("").to_owned())
            .unwrap_or_default();
        ToolResult::text(&call.id, format!("{}|{notes}", ids.join(",")))
    }
}

#[tokio::test]
async fn a_tool_reads_the_artifacts_of_its_conversation_only() {
    let stores = looopy_stores_memory::stores();
    stores
        .artifacts
        .put(
            "c-view",
            "t-earlier",
            &Artifact::new("notes", vec![Part::text("remember the milk")]),
        )
        .await
        .unwrap();
    stores
        .artifacts
        .put(
            "c-other",
            "t-x",
            &Artifact::new("secret", vec![Part::text("not yours")]),
        )
        .await
        .unwrap();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("first answer"))
        .respond(call("list_artifacts", &["a"]))
        .respond(LlmResponse::text("done"));
    let agent = builder("c-view", &llm, &stores)
        .tools(Reader)
        .build()
        .unwrap();
    let (_, first) = turn(&agent, "hello").await;
    let (_, second) = turn(&agent, "what do we have?").await;
    let result = second
        .new_messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("a"))
        .unwrap()
        .text();
    let (ids, notes) = result.split_once('|').unwrap();
    let ids: Vec<&str> = ids.split(',').collect();
    assert!(ids.contains(&"notes"), "{result}");
    // The answer of the first turn, streamed as an artifact and saved.
    assert!(
        ids.iter().any(|id| id.starts_with(first.task_id.as_str())),
        "{result}"
    );
    assert!(!ids.contains(&"secret"), "another conversation's: {result}");
    assert_eq!(notes, "remember the milk");
}
