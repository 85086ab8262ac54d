//! What an Agent built from just a model, tools and stores does without
//! being told: it sends the newest 50 messages (tool pairs kept together),
//! stores long tool results as artifacts that the model pages through, and
//! stops a tool call after 30 s.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::{
    Agent, DEFAULT_TOOL_OUTPUT_MAX_CHARS, DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS,
    DEFAULT_WINDOW_MESSAGES, WindowConfig,
};
use looopy_core::store::Stores;
use looopy_core::{LlmResponse, Message, Part, ToolCall};
use looopy_loop::tool_output::{READ_TOOL_OUTPUT, ToolOutputCache};
use looopy_testkit::ScriptedLlm;
use looopy_tools::LocalTools;
use support::*;

/// Seeds a conversation with `n` alternating user / assistant messages.
async fn seed_history(stores: &Stores, context: &str, n: usize) {
    let messages: Vec<Message> = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("u{i}"))
            } else {
                Message::assistant(format!("a{i}"))
            }
        })
        .collect();
    stores.messages.append(context, &messages).await.unwrap();
}

#[tokio::test]
async fn the_model_gets_the_newest_fifty_messages_by_default() {
    let stores = looopy_stores_memory::stores();
    seed_history(&stores, "c-default-window", 80).await;
    let llm = ScriptedLlm::new().respond(LlmResponse::text("ok"));
    let agent = builder("c-default-window", &llm, &stores).build().unwrap();
    turn(&agent, "latest").await;

    let sent = &llm.requests()[0].messages;
    assert_eq!(sent.len(), DEFAULT_WINDOW_MESSAGES);
    assert_eq!(sent.to_vec().last().unwrap().text(), "latest");
    // Nothing is lost: the store keeps the whole conversation.
    assert_eq!(stores.messages.count("c-default-window").await.unwrap(), 82);
}

#[tokio::test]
async fn an_unbounded_window_sends_everything() {
    let stores = looopy_stores_memory::stores();
    seed_history(&stores, "c-unbounded", 80).await;
    let llm = ScriptedLlm::new().respond(LlmResponse::text("ok"));
    let agent = builder("c-unbounded", &llm, &stores)
        .window(WindowConfig::unbounded())
        .build()
        .unwrap();
    turn(&agent, "latest").await;
    assert_eq!(llm.requests()[0].messages.len(), 81);
}

fn big_tool() -> LocalTools {
    LocalTools::new().raw_tool(
        looopy_core::ToolDefinition::without_parameters("dump", "a long report"),
        |call: ToolCall, _cx| async move {
            looopy_core::ToolResult::text(&call.id, "x".repeat(DEFAULT_TOOL_OUTPUT_MAX_CHARS + 1))
        },
    )
}

/// A model that calls `dump` once, then answers.
fn dump_then_done() -> ScriptedLlm {
    ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("call-1", "dump", "{}")],
        ))
        .respond(LlmResponse::text("done"))
}

#[tokio::test]
async fn long_tool_results_become_artifacts_by_default() {
    let stores = looopy_stores_memory::stores();
    let llm = dump_then_done();
    let agent = builder("c-default-cache", &llm, &stores)
        .tools(big_tool())
        .build()
        .unwrap();
    turn(&agent, "report please").await;

    let requests = llm.requests();
    let offered =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    // The reader is offered once an output has been cut, not before.
    assert_eq!(offered(0), ["dump"]);
    assert!(
        offered(1).contains(&READ_TOOL_OUTPUT.to_string()),
        "{:?}",
        offered(1)
    );
    let result = requests[1].messages.to_vec().last().unwrap().text();
    assert!(
        result.len() < DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS + 1_000,
        "the model was sent {} characters",
        result.len()
    );
    let stored = stores
        .artifacts
        .get("c-default-cache", &ToolOutputCache::artifact_id("call-1"))
        .await
        .unwrap()
        .expect("the whole result is stored");
    let text: usize = stored
        .artifact
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => text.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(text, DEFAULT_TOOL_OUTPUT_MAX_CHARS + 1);
}

#[tokio::test]
async fn the_next_turn_offers_the_reader_of_an_output_cut_in_an_earlier_one() {
    let stores = looopy_stores_memory::stores();
    let llm = dump_then_done().respond(LlmResponse::text("page read"));
    let agent = builder("c-cut-earlier", &llm, &stores)
        .tools(big_tool())
        .build()
        .unwrap();
    turn(&agent, "report please").await;
    turn(&agent, "read me the rest").await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    let offered: Vec<_> = requests[2].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(offered.contains(&READ_TOOL_OUTPUT), "{offered:?}");
    // Its history, loaded from the message store, holds the cut output.
    assert!(requests[2].messages.iter().any(|m| m.cut_output.is_some()));
}

#[tokio::test]
async fn the_cache_can_be_turned_off() {
    let stores = looopy_stores_memory::stores();
    let llm = dump_then_done();
    let agent = Agent::builder("c-no-cache")
        .llm(llm.clone())
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .tools(big_tool())
        .without_tool_output_cache()
        .build()
        .unwrap();
    turn(&agent, "report please").await;
    let requests = llm.requests();
    assert!(requests[0].tools.iter().all(|t| t.name != READ_TOOL_OUTPUT));
    let result = requests[1].messages.to_vec().last().unwrap().text();
    assert_eq!(result.len(), DEFAULT_TOOL_OUTPUT_MAX_CHARS + 1);
}

#[tokio::test]
async fn a_loop_customizer_replaces_the_default_cache_instead_of_adding_one() {
    let stores = looopy_stores_memory::stores();
    let llm = dump_then_done();
    let artifacts = stores.artifacts.clone();
    let agent = builder("c-custom-cache", &llm, &stores)
        .tools(big_tool())
        .configure_loop(move |b| b.tool_output_cache(ToolOutputCache::new(artifacts, 100, 10)))
        .build()
        .unwrap();
    turn(&agent, "report please").await;
    let requests = llm.requests();
    let reads = requests[1]
        .tools
        .iter()
        .filter(|t| t.name == READ_TOOL_OUTPUT)
        .count();
    assert_eq!(reads, 1, "one read_tool_output, not two");
    let result = requests[1].messages.to_vec().last().unwrap().text();
    assert!(
        result.len() < 1_000,
        "the customizer's 10-character preview"
    );
}

/// A tool that takes a minute (of the test's paused clock).
fn minute_tool() -> LocalTools {
    LocalTools::new().raw_tool(
        looopy_core::ToolDefinition::without_parameters("slow", "takes a minute"),
        |call: ToolCall, _cx| async move {
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            looopy_core::ToolResult::text(&call.id, "finally")
        },
    )
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_times_out_after_thirty_seconds_by_default() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("call-slow", "slow", "{}")],
        ))
        .respond(LlmResponse::text("gave up on it"));
    let agent = builder("c-default-timeout", &llm, &stores)
        .tools(minute_tool())
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let (_, finished) = turn(&agent, "be slow").await;
    let took = started.elapsed();
    assert_eq!(finished.state, looopy_core::TaskState::Completed);

    // The model was told that the call timed out, when the clock reached
    // the default limit (the paused clock jumps from timer to timer).
    let result = llm.requests()[1]
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("call-slow"))
        .cloned()
        .expect("the call's result");
    assert_eq!(
        result.tool_failure(),
        Some(looopy_core::ToolFailure::Timeout),
        "{}",
        result.text()
    );
    assert!(
        took >= std::time::Duration::from_secs(30) && took < std::time::Duration::from_secs(31),
        "the turn took {took:?} of the paused clock"
    );
}
