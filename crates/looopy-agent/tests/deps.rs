//! Typed dependencies through the Agent: registered on its builder, read
//! by a tool with `cx.dep::<T>()`, overridden for one turn.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::{Agent, TurnOptions};
use looopy_core::{LlmResponse, Message, Role, TurnContext};
use looopy_testkit::ScriptedLlm;
use looopy_tools::{LocalTools, NoArgs, ToolFnError};
use support::*;

/// What the `whoami` tool needs: a client, in an application.
struct Directory {
    name: &'static str,
}

fn whoami() -> LocalTools {
    LocalTools::new().tool(
        "whoami",
        "Who the directory says we are",
        |_: NoArgs, cx: TurnContext| async move {
            let directory = cx.dep::<Directory>()?;
            Ok::<_, ToolFnError>(directory.name.to_owned())
        },
    )
}

/// The text of the tool result of the turn's only call.
async fn tool_text(agent: &Agent, options: TurnOptions) -> String {
    let turn = agent
        .execute_turn_with(Some(Message::user("who?")), options)
        .await
        .unwrap();
    let summary = turn.finish().await.unwrap();
    summary
        .new_messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .text()
}

#[tokio::test]
async fn a_tool_reads_the_agents_dependency_and_a_turn_overrides_it() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("whoami", &["w1"]))
        .respond(LlmResponse::text("ok"))
        .respond(call("whoami", &["w2"]))
        .respond(LlmResponse::text("ok"))
        .respond(call("whoami", &["w3"]))
        .respond(LlmResponse::text("ok"));
    let agent = builder("c-deps", &llm, &stores)
        .tools(whoami())
        .dep(Directory { name: "production" })
        .build()
        .unwrap();
    assert_eq!(tool_text(&agent, TurnOptions::new()).await, "production");
    let test = TurnOptions::new().with_dep(Directory { name: "stand-in" });
    assert_eq!(tool_text(&agent, test).await, "stand-in");
    assert_eq!(
        tool_text(&agent, TurnOptions::new()).await,
        "production",
        "the override was for one turn"
    );
}

#[tokio::test]
async fn without_the_dependency_the_call_fails_naming_its_type() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("whoami", &["w1"]))
        .respond(LlmResponse::text("ok"));
    let agent = builder("c-no-deps", &llm, &stores)
        .tools(whoami())
        .build()
        .unwrap();
    let text = tool_text(&agent, TurnOptions::new()).await;
    assert!(
        text.starts_with("Error: missing dependency `") && text.contains("Directory`"),
        "{text}"
    );
}
