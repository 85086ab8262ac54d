//! Identical calls in one model response: of an idempotent tool, they run
//! once and every call gets the result under its own id.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use looopy_core::{History, LlmResponse, Message, Role, ToolCall, ToolResult, TurnContext};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;
use support::*;

/// A tool `lookup` that counts its runs and echoes its arguments.
fn counted(idempotent: bool) -> (FnTools, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let tools = FnTools::new().tool("lookup", move |c, _| {
        let r = r.clone();
        async move {
            let n = r.fetch_add(1, Ordering::SeqCst) + 1;
            let q = c.parsed_arguments()["q"].as_str().unwrap_or("").to_owned();
            ToolResult::text(&c.id, format!("{q} (run {n})"))
        }
    });
    let tools = if idempotent {
        tools.idempotent("lookup")
    } else {
        tools
    };
    (tools, runs)
}

/// One response with two identical calls (spacing and key order differ)
/// and a third with other arguments.
fn model() -> ScriptedLlm {
    ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![
                ToolCall::new("a1", "lookup", r#"{"q":"paris","n":1}"#),
                ToolCall::new("a2", "lookup", r#"{ "n": 1, "q": "paris" }"#),
                ToolCall::new("b1", "lookup", r#"{"q":"rome","n":1}"#),
            ],
        ))
        .respond(LlmResponse::text("done"))
}

async fn run(idempotent: bool) -> (History, usize, Vec<looopy_core::AgentEvent>) {
    let (tools, runs) = counted(idempotent);
    let llm = model();
    let agent = AgentLoop::builder(llm).tools(tools).build();
    let turn = agent.start_turn(
        History::from(vec![Message::user("weather?")]),
        TurnContext::new("t-batch", "c-batch"),
    );
    let handle = turn.handle();
    let events = drain(turn).await;
    (handle.history(), runs.load(Ordering::SeqCst), events)
}

#[tokio::test]
async fn identical_calls_of_an_idempotent_tool_run_once_and_each_gets_the_result() {
    let (history, runs, events) = run(true).await;
    assert_eq!(runs, 2, "paris once, rome once");
    let results: Vec<(String, String)> = history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap(), m.text()))
        .collect();
    let paris = results.iter().find(|(id, _)| id == "a1").unwrap().1.clone();
    assert!(paris.starts_with("paris (run "), "{paris}");
    assert_eq!(
        results,
        vec![
            ("a1".to_owned(), paris.clone()),
            ("a2".to_owned(), paris),
            ("b1".to_owned(), results[2].1.clone()),
        ],
        "every call has its own result, in the model's order"
    );
    assert!(results[2].1.starts_with("rome"));
    // Every call is reported complete, the twin too.
    let completed = kinds(&events)
        .into_iter()
        .filter(|k| *k == "internal:tool-complete")
        .count();
    assert_eq!(completed, 3);
    assert_eq!(final_text(&events), "done");
}

#[tokio::test]
async fn identical_calls_of_a_tool_with_effects_each_run() {
    let (history, runs, _) = run(false).await;
    assert_eq!(
        runs, 3,
        "a tool not declared idempotent runs for every call"
    );
    assert_eq!(tool_texts(&history).len(), 3);
}
