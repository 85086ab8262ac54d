//! The built-in artifact tools: the model creates, appends to and replaces
//! artifacts of the conversation; each change is stored and announced.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::artifact_tools::{APPEND_TO_ARTIFACT, CREATE_ARTIFACT, REPLACE_ARTIFACT};
use looopy_core::{AgentEvent, EventPayload, LlmResponse, Part, ToolCall};
use looopy_testkit::ScriptedLlm;
use support::*;

fn one(id: &str, name: &str, args: &str) -> LlmResponse {
    LlmResponse::tool_calls("", vec![ToolCall::new(id, name, args)])
}

fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).collect()
}

/// (artifact id, text, append) of each artifact-update made by a tool.
fn updates(events: &[AgentEvent]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ArtifactUpdate {
                artifact, append, ..
            } if artifact.artifact_id == "report" => Some((
                artifact.artifact_id.clone(),
                text_of(&artifact.parts),
                *append,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_model_creates_appends_to_and_replaces_an_artifact() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(one(
            "a",
            CREATE_ARTIFACT,
            r#"{"artifact_id":"report","name":"Report","text":"Intro. "}"#,
        ))
        .respond(one(
            "b",
            APPEND_TO_ARTIFACT,
            r#"{"artifact_id":"report","text":"Findings."}"#,
        ))
        .respond(one(
            "c",
            CREATE_ARTIFACT,
            r#"{"artifact_id":"report","text":"again"}"#,
        ))
        .respond(LlmResponse::text("written"))
        .respond(one(
            "d",
            REPLACE_ARTIFACT,
            r#"{"artifact_id":"report","text":"Short."}"#,
        ))
        .respond(one(
            "e",
            APPEND_TO_ARTIFACT,
            r#"{"artifact_id":"missing","text":"x"}"#,
        ))
        .respond(LlmResponse::text("done"));
    let agent = builder("c-arts", &llm, &stores)
        .artifact_tools(true)
        .build()
        .unwrap();
    let (events, first) = turn(&agent, "write a report").await;
    let offered: Vec<String> = llm.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    for name in [CREATE_ARTIFACT, APPEND_TO_ARTIFACT, REPLACE_ARTIFACT] {
        assert!(offered.iter().any(|n| n == name), "{offered:?}");
    }
    assert_eq!(
        updates(&events),
        vec![
            ("report".into(), "Intro. ".into(), false),
            ("report".into(), "Intro. Findings.".into(), false),
        ]
    );
    let stored = stores
        .artifacts
        .get("c-arts", "report")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&stored.artifact.parts), "Intro. Findings.");
    assert_eq!(stored.artifact.name.as_deref(), Some("Report"));
    // Creating it twice is refused, and the model is told what to do.
    let refused = first
        .new_messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("c"))
        .unwrap();
    assert!(refused.is_error());
    assert!(
        refused.text().contains(REPLACE_ARTIFACT),
        "{}",
        refused.text()
    );

    let (events, second) = turn(&agent, "shorter").await;
    assert_eq!(
        updates(&events),
        vec![("report".into(), "Short.".into(), false)]
    );
    let stored = stores
        .artifacts
        .get("c-arts", "report")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&stored.artifact.parts), "Short.");
    assert_eq!(stored.artifact.name.as_deref(), Some("Report"), "name kept");
    let missing = second
        .new_messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("e"))
        .unwrap();
    assert!(missing.is_error());
    assert!(
        stores
            .artifacts
            .get("c-arts", "missing")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn the_artifact_tools_are_off_by_default() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(LlmResponse::text("hi"));
    let agent = builder("c-arts-off", &llm, &stores).build().unwrap();
    turn(&agent, "hello").await;
    assert!(
        !llm.requests()[0]
            .tools
            .iter()
            .any(|t| t.name == CREATE_ARTIFACT)
    );
}
