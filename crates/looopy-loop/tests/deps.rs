//! Typed dependencies for tools: registered once on the loop's builder,
//! read by type from the tool's context, overridden per turn.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::{History, Message, Role, ToolFailure, ToolResult, TurnContext};
use looopy_loop::AgentLoop;
use support::*;

/// Application state a tool needs (a pool, a client, a flag...).
struct Greeting(&'static str);

/// A second dependency, which the override leaves alone.
struct Punctuation(char);

/// `greet` answers with the `Greeting` and `Punctuation` it finds.
fn greet() -> FnTools {
    FnTools::new().tool("greet", |c, cx: TurnContext| async move {
        let greeting = match cx.dep::<Greeting>() {
            Ok(g) => g,
            Err(e) => return ToolResult::from_error(&c.id, &e),
        };
        let mark = cx.dep::<Punctuation>().map_or('.', |p| p.0);
        ToolResult::text(&c.id, format!("{}{mark}", greeting.0))
    })
}

fn tool_message(history: &History) -> Message {
    history
        .iter()
        .find(|m| m.role == Role::Tool)
        .cloned()
        .unwrap()
}

async fn greet_once(agent: &AgentLoop, cx: TurnContext) -> Message {
    let turn = agent.start_turn(History::from(vec![Message::user("hi")]), cx);
    let handle = turn.handle();
    drain(turn).await;
    tool_message(&handle.history())
}

fn model() -> looopy_testkit::ScriptedLlm {
    calls_then(&[("g1", "greet", "{}")], "done")
        .respond(looopy_core::LlmResponse::tool_calls(
            "",
            vec![looopy_core::ToolCall::new("g2", "greet", "{}")],
        ))
        .respond(looopy_core::LlmResponse::text("done"))
}

#[tokio::test]
async fn a_tool_reads_the_loops_dependency_and_a_turn_overrides_it() {
    let agent = AgentLoop::builder(model())
        .tools(greet())
        .dep(Greeting("hello"))
        .dep(Punctuation('!'))
        .build();
    let seen = greet_once(&agent, TurnContext::new("t1", "c")).await;
    assert_eq!(seen.text(), "hello!");
    // A turn (a test) gives its own value of the type: it wins, for that
    // turn only; the other dependency stays the loop's.
    let cx = TurnContext::new("t2", "c").with_dep(Greeting("stand-in"));
    let seen = greet_once(&agent, cx).await;
    assert_eq!(seen.text(), "stand-in!");
    assert_eq!(agent.deps().type_names().len(), 2);
    assert_eq!(agent.deps().get::<Greeting>().unwrap().0, "hello");
}

#[tokio::test]
async fn a_missing_dependency_is_a_failed_call_naming_the_type() {
    let agent = AgentLoop::builder(calls_then(&[("g1", "greet", "{}")], "done"))
        .tools(greet())
        .build();
    let seen = greet_once(&agent, TurnContext::new("t", "c")).await;
    assert_eq!(seen.failure, Some(ToolFailure::Failed));
    let text = seen.text();
    assert!(
        text.starts_with("Error: missing dependency `") && text.contains("deps::Greeting`"),
        "{text}"
    );
}
