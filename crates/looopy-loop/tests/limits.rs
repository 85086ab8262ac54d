//! Per-turn settings, execution limits, the tool failure mode, and hooks
//! that change a turn (`before_turn`, `after_turn`).

#![allow(clippy::unwrap_used)]
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use looopy_core::{
    EventPayload, History, LlmResponse, Message, Role, TaskState, ToolCall, ToolFailure,
    ToolResult, TurnContext,
};
use looopy_loop::hooks::{AfterTurn, BeforeTurn, EndingTurn, Hook, HookContext, HookError};
use looopy_loop::{AgentLoop, ToolFailureMode, TurnEnd, TurnSettings};
use looopy_testkit::ScriptedLlm;
use support::*;

fn cx() -> TurnContext {
    TurnContext::new("task-l", "ctx-l")
}

fn user(text: &str) -> History {
    History::from(vec![Message::user(text)])
}

fn call(id: &str) -> LlmResponse {
    LlmResponse::tool_calls("", vec![ToolCall::new(id, "t", "{}")])
}

/// A tool `t` that counts its executions.
fn counted() -> (FnTools, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let tools = FnTools::new().tool("t", move |c, _| {
        let r = r.clone();
        async move {
            r.fetch_add(1, Ordering::SeqCst);
            ToolResult::text(&c.id, "ok")
        }
    });
    (tools, runs)
}

#[tokio::test]
async fn a_turns_system_prompt_replaces_the_loops_in_the_request() {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("a"))
        .respond(LlmResponse::text("b"));
    let agent = AgentLoop::builder(llm.clone())
        .system_prompt("loop prompt")
        .build();
    let settings = TurnSettings::new().with_system_prompt("turn prompt");
    let events = drain(agent.start_turn_with(user("x"), cx(), settings)).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    // The next turn without settings is back to the loop's prompt.
    drain(agent.start_turn(user("y"), cx())).await;
    let reqs = llm.requests();
    assert_eq!(reqs[0].system_prompt.as_deref(), Some("turn prompt"));
    assert_eq!(reqs[1].system_prompt.as_deref(), Some("loop prompt"));
}

#[tokio::test]
async fn a_turns_max_iterations_wraps_up_after_one_iteration() {
    let (tools, runs) = counted();
    let llm = ScriptedLlm::new()
        .respond(call("c1"))
        .respond(LlmResponse::text("summary"));
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .max_iterations(10)
        .build();
    let settings = TurnSettings::new().with_max_iterations(1);
    let events = drain(agent.start_turn_with(user("x"), cx(), settings)).await;
    let meta = final_meta(&events);
    assert_eq!(meta["finishReason"], "max_iterations");
    assert_eq!(meta["iterations"], 1);
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2, "one iteration, then the wrap-up call");
    assert!(reqs[1].tools.is_empty());
    assert_eq!(reqs[1].tool_choice, None);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn max_tool_calls_runs_no_call_past_the_limit_and_wraps_up() {
    let (tools, runs) = counted();
    // Iteration 1 asks for one call, iteration 2 for two: with a limit of
    // two, the last of those must not run.
    let llm = ScriptedLlm::new()
        .respond(call("c1"))
        .respond(LlmResponse::tool_calls(
            "",
            vec![
                ToolCall::new("c2", "t", "{}"),
                ToolCall::new("c3", "t", "{}"),
            ],
        ))
        .respond(LlmResponse::text("wrapped up"));
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .max_tool_calls(100)
        .build();
    let settings = TurnSettings::new().with_max_tool_calls(2);
    let stream = agent.start_turn_with(user("x"), cx(), settings);
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let meta = final_meta(&events);
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(meta["finishReason"], "max_tool_calls");
    assert_eq!(meta["maxToolCallsReached"], true);
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].tools.is_empty(), "the wrap-up call offers no tools");
    let outcome = handle.outcome().unwrap();
    assert_eq!(outcome.end, TurnEnd::MaxToolCalls);
    assert_eq!(outcome.message.unwrap().text(), "wrapped up");
    // The call past the limit has a result (the history stays whole).
    let skipped = outcome
        .history
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("c3"))
        .unwrap();
    assert!(
        skipped.text().contains("limit of 2 tool calls"),
        "{skipped:?}"
    );
}

#[tokio::test]
async fn the_loops_tool_call_limit_applies_without_turn_settings() {
    let (tools, runs) = counted();
    let llm = ScriptedLlm::new()
        .respond(call("c1"))
        .respond(call("c2"))
        .respond(LlmResponse::text("done"));
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .max_tool_calls(1)
        .build();
    let events = drain(agent.start_turn(user("x"), cx())).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(final_meta(&events)["finishReason"], "max_tool_calls");
}

#[tokio::test]
async fn a_wall_time_limit_stops_a_turn_whose_tool_never_ends() {
    let tools = FnTools::new().tool("t", |c, _| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        ToolResult::text(&c.id, "too late")
    });
    let llm = ScriptedLlm::new()
        .respond(call("c1"))
        .respond(LlmResponse::text("never asked"));
    let agent = AgentLoop::builder(llm.clone()).tools(tools).build();
    let settings = TurnSettings::new().with_max_duration(Duration::from_millis(200));
    let stream = agent.start_turn_with(user("x"), cx(), settings);
    let handle = stream.handle();
    let events = tokio::time::timeout(Duration::from_secs(60), drain(stream))
        .await
        .expect("the limit did not stop the turn");
    let meta = final_meta(&events);
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert_eq!(meta["finishReason"], "max_duration");
    assert_eq!(meta["error"]["type"], "limit_exceeded");
    assert_eq!(handle.outcome().unwrap().end, TurnEnd::MaxDuration);
    assert_eq!(llm.requests().len(), 1, "the model is not called again");
    // The running call was closed as cancelled.
    let closed = events.iter().any(|e| {
        matches!(&*e.payload, EventPayload::ToolComplete { result, .. }
            if result.failure == Some(ToolFailure::Cancelled))
    });
    assert!(closed, "{events:?}");
}

#[tokio::test]
async fn an_outside_cancel_under_a_wall_time_limit_still_reads_cancelled() {
    let tools = FnTools::new().tool("t", |c, _| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        ToolResult::text(&c.id, "too late")
    });
    let llm = ScriptedLlm::new().respond(call("c1"));
    let agent = AgentLoop::builder(llm).tools(tools).build();
    let cx = cx();
    let cancel = cx.cancel.clone();
    let settings = TurnSettings::new().with_max_duration(Duration::from_secs(3600));
    let stream = agent.start_turn_with(user("x"), cx, settings);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let events = drain(stream).await;
    assert_eq!(final_meta(&events)["finishReason"], "cancelled");
}

fn failing_and_ok() -> (FnTools, Arc<AtomicUsize>) {
    let (tools, runs) = counted();
    let tools = tools.tool("broken", |c, _| async move {
        ToolResult::failed(&c.id, ToolFailure::Failed, "disk on fire")
    });
    (tools, runs)
}

#[tokio::test]
async fn tool_failure_mode_fail_ends_the_turn_on_the_first_failed_call() {
    let (tools, runs) = failing_and_ok();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("b1", "broken", "{}")],
        ))
        .respond(call("c1"))
        .respond(LlmResponse::text("went on"));
    let agent = AgentLoop::builder(llm.clone()).tools(tools).build();
    let settings = TurnSettings::new().with_tool_failure_mode(ToolFailureMode::Fail);
    let stream = agent.start_turn_with(user("x"), cx(), settings);
    let handle = stream.handle();
    let events = drain(stream).await;
    let meta = final_meta(&events);
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert_eq!(meta["finishReason"], "tool_failed");
    assert_eq!(meta["error"]["type"], "tool_failed");
    assert_eq!(meta["failedToolCall"]["name"], "broken");
    assert_eq!(llm.requests().len(), 1, "the model does not see the error");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let outcome = handle.outcome().unwrap();
    assert!(outcome.message.unwrap().text().contains("disk on fire"));
    // The failed call's result is in the history.
    assert!(
        outcome
            .history
            .iter()
            .any(|m| m.tool_call_id.as_deref() == Some("b1"))
    );
}

#[tokio::test]
async fn tool_failure_mode_continue_lets_the_model_read_the_error() {
    let (tools, _) = failing_and_ok();
    let llm = calls_then(&[("b1", "broken", "{}")], "went on");
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .tool_failure_mode(ToolFailureMode::Fail)
        .build();
    // The turn's setting overrides the loop's `fail`.
    let settings = TurnSettings::new().with_tool_failure_mode(ToolFailureMode::Continue);
    let events = drain(agent.start_turn_with(user("x"), cx(), settings)).await;
    assert_eq!(final_meta(&events)["finishReason"], "finished");
    assert_eq!(llm.requests().len(), 2);
}

/// Rewrites the history (keeps only the last message, prefixed) and sets the
/// turn's system prompt; replaces the final answer.
struct Rewriter;

#[async_trait]
impl Hook for Rewriter {
    async fn before_turn(
        &self,
        _cx: &HookContext,
        history: &History,
    ) -> Result<BeforeTurn, HookError> {
        let last = history.last().unwrap().text();
        let rewritten = History::from(vec![Message::user(format!("[redacted] {last}"))]);
        Ok(BeforeTurn::unchanged()
            .with_history(rewritten)
            .with_settings(TurnSettings::new().with_system_prompt("from the hook")))
    }

    async fn after_turn(
        &self,
        _cx: &HookContext,
        summary: &EndingTurn,
    ) -> Result<AfterTurn, HookError> {
        let text = summary.final_text.clone().unwrap_or_default();
        Ok(AfterTurn::ReplaceMessage(Message::assistant(format!(
            "{text} (reviewed)"
        ))))
    }
}

#[tokio::test]
async fn before_turn_rewrites_the_history_and_after_turn_the_final_message() {
    let llm = ScriptedLlm::new().respond(LlmResponse::text("answer"));
    let agent = AgentLoop::builder(llm.clone())
        .system_prompt("loop prompt")
        .hook(Rewriter)
        .build();
    let history = History::from(vec![
        Message::user("secret earlier message"),
        Message::assistant("earlier answer"),
        Message::user("question"),
    ]);
    let stream = agent.start_turn(history, cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    let req = &llm.requests()[0];
    assert_eq!(req.messages.len(), 1, "{:?}", req.messages);
    assert_eq!(req.messages.last().unwrap().text(), "[redacted] question");
    assert_eq!(req.system_prompt.as_deref(), Some("from the hook"));
    let last = final_event(&events);
    assert_eq!(last.state(), Some(TaskState::Completed));
    assert_eq!(final_text(&events), "answer (reviewed)");
    let outcome = handle.outcome().unwrap();
    // What is stored is what the caller was shown; the turn's own messages
    // start after the rewritten history.
    assert_eq!(outcome.history.last().unwrap().text(), "answer (reviewed)");
    assert_eq!(outcome.history.last().unwrap().role, Role::Assistant);
    let new: Vec<String> = outcome.new_messages().iter().map(Message::text).collect();
    assert_eq!(new, vec!["answer (reviewed)".to_owned()]);
}
