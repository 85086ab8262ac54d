//! AgentLoop behaviour: event order, tools, termination.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use looopy_core::{
    EventPayload, History, LlmChunk, LlmError, LlmResponse, Message, Role, TaskState, ToolCall,
    ToolOutcome, ToolResult, ToolSignal, TurnContext, Usage,
};
use looopy_loop::{AgentLoop, TurnInput};
use looopy_testkit::ScriptedLlm;
use support::*;

fn cx() -> TurnContext {
    TurnContext::new("task-1", "ctx-1")
}

fn user(text: &str) -> History {
    History::from(vec![Message::user(text)])
}

fn usage(i: u64, o: u64) -> Usage {
    Usage {
        input_tokens: i,
        output_tokens: o,
        total_tokens: i + o,
        ..Default::default()
    }
}

#[tokio::test]
async fn plain_answer_follows_the_event_order_and_keeps_the_system_prompt_out_of_history() {
    let llm = ScriptedLlm::new().respond(LlmResponse::text("Hello there").with_usage(usage(5, 2)));
    let agent = AgentLoop::builder(llm.clone())
        .system_prompt("You are terse.")
        .build();
    let stream = agent.start_turn(user("hi"), cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(
        kinds(&events),
        vec![
            "task",
            "status-update",
            "internal:execution-start",
            "internal:iteration-start",
            "internal:llm-call",
            "artifact-update",
            "internal:llm-response",
            "internal:usage",
            "internal:iteration-complete",
            "internal:execution-end",
            "status-update"
        ]
    );
    assert_eq!(events[0].state(), Some(TaskState::Submitted));
    assert_eq!(events[1].state(), Some(TaskState::Working));
    let last = final_event(&events);
    assert_eq!(last.state(), Some(TaskState::Completed));
    let meta = final_meta(&events);
    assert_eq!(meta["finishReason"], "finished");
    assert_eq!(meta["usage"]["totalTokens"], 7);
    assert_eq!(final_text(&events), "Hello there");

    let req = &llm.requests()[0];
    assert_eq!(req.system_prompt.as_deref(), Some("You are terse."));
    assert!(req.messages.iter().all(|m| m.role != Role::System));
    let outcome = handle.outcome().unwrap();
    assert_eq!(outcome.new_messages().len(), 1);
    assert_eq!(outcome.history.len(), 2);
    assert!(outcome.history.iter().all(|m| m.role != Role::System));
}

#[tokio::test]
async fn streamed_text_arrives_as_artifact_chunks_with_the_last_one_marked() {
    let llm = ScriptedLlm::new().stream(vec![
        LlmChunk::TextDelta("Hel".into()),
        LlmChunk::TextDelta("lo ".into()),
        LlmChunk::TextDelta("world".into()),
    ]);
    let events = drain(AgentLoop::builder(llm).build().start_turn(user("hi"), cx())).await;
    let chunks: Vec<(String, bool, bool)> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ArtifactUpdate {
                artifact,
                append,
                last_chunk,
            } => Some((
                artifact.parts[0].as_text().unwrap().to_owned(),
                *append,
                *last_chunk,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        chunks,
        vec![
            ("Hel".into(), false, false),
            ("lo ".into(), true, false),
            ("world".into(), true, true)
        ]
    );
}

#[tokio::test]
async fn tools_run_in_parallel_within_the_limit_and_results_keep_the_model_order() {
    let conc = Concurrency::default();
    let c2 = conc.clone();
    // Earlier calls take longer, so they finish last.
    let tools = FnTools::new().tool("slow", move |call, _| {
        let conc = c2.clone();
        async move {
            let _g = conc.enter();
            let n: u64 = call.parsed_arguments()["n"].as_u64().unwrap();
            tokio::time::sleep(Duration::from_millis(60 - n * 10)).await;
            ToolResult::text(&call.id, format!("r{n}"))
        }
    });
    let calls = (0..5)
        .map(|n| ToolCall::new(format!("c{n}"), "slow", format!("{{\"n\":{n}}}")))
        .collect();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls("Working on it", calls))
        .respond(LlmResponse::text("done"));
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .max_parallel_tools(2)
        .build();
    let stream = agent.start_turn(user("go"), cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(
        conc.max(),
        2,
        "at most two calls at once, and two did overlap"
    );

    let history = handle.outcome().unwrap().history;
    assert_eq!(tool_texts(&history), vec!["r0", "r1", "r2", "r3", "r4"]);
    // The second request saw every result.
    assert_eq!(llm.requests()[1].messages.len(), 7);
    // Order: text, then per call start/complete.
    let k = kinds(&events);
    let text = k.iter().position(|k| *k == "internal:text").unwrap();
    let first_start = k.iter().position(|k| *k == "internal:tool-start").unwrap();
    assert!(text < first_start);
    assert_eq!(
        k.iter().filter(|k| **k == "internal:tool-complete").count(),
        5
    );
}

#[tokio::test]
async fn unknown_tools_bad_json_and_panics_become_error_results_and_the_loop_goes_on() {
    let saw_raw = Arc::new(std::sync::Mutex::new(String::new()));
    let saw = saw_raw.clone();
    let tools = FnTools::new()
        .tool("raw", move |call, _| {
            *saw.lock().unwrap() = call.arguments.clone();
            async move { ToolResult::text(&call.id, "took it raw") }
        })
        .tool("boom", |_call, _| async move { panic!("kaboom") })
        .echo("fine", Duration::ZERO);
    let llm = calls_then(
        &[
            ("a", "nope", "{}"),
            ("b", "raw", "{not json"),
            ("c", "boom", "{}"),
            ("d", "fine", "{\"x\":1}"),
        ],
        "recovered",
    );
    let stream = AgentLoop::builder(llm)
        .tools(tools)
        .build()
        .start_turn(user("go"), cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    let history = handle.outcome().unwrap().history;
    let tool_msgs: Vec<_> = history.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(tool_msgs[0].text(), "Error: Unknown tool 'nope'");
    assert!(tool_msgs[0].is_error());
    assert_eq!(tool_msgs[1].text(), "took it raw");
    assert!(tool_msgs[2].is_error());
    assert!(
        tool_msgs[2].text().contains("kaboom"),
        "{}",
        tool_msgs[2].text()
    );
    assert_eq!(tool_msgs[3].text(), "fine:{\"x\":1}");
    assert!(!tool_msgs[3].is_error());
    assert_eq!(*saw_raw.lock().unwrap(), "{not json");
    let raw_start = events.iter().find_map(|e| match &*e.payload {
        EventPayload::ToolStart { call, arguments } if call.id == "b" => Some(arguments.clone()),
        _ => None,
    });
    assert_eq!(raw_start.unwrap(), serde_json::json!({"_raw": "{not json"}));
    let outcomes: Vec<ToolOutcome> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ToolComplete { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| **o == ToolOutcome::Error)
            .count(),
        2
    );
}

#[tokio::test]
async fn duplicate_tool_names_fail_the_turn_with_a_clear_message() {
    let a = FnTools::new().echo("same", Duration::ZERO);
    let b = FnTools::new().echo("same", Duration::ZERO);
    let llm = ScriptedLlm::new().respond(LlmResponse::text("never"));
    let events = drain(
        AgentLoop::builder(llm.clone())
            .tools(a)
            .tools(b)
            .build()
            .start_turn(user("x"), cx()),
    )
    .await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert!(final_text(&events).contains("duplicate tool name 'same'"));
    assert_eq!(llm.request_count(), 0);
}

#[tokio::test]
async fn turn_tools_join_the_loops_tools_for_that_turn_only() {
    let own = FnTools::new().echo("own", Duration::ZERO);
    let extra: Arc<dyn looopy_core::ToolProvider> =
        Arc::new(FnTools::new().echo("extra", Duration::ZERO));
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("c1", "extra", r#"{"v":1}"#)],
        ))
        .respond(LlmResponse::text("done"))
        .respond(LlmResponse::text("again"));
    let agent = AgentLoop::builder(llm.clone()).tools(own).build();
    let events =
        drain(agent.start_turn_with(user("x"), cx(), TurnInput::new().with_tools(extra.clone())))
            .await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    let names = |i: usize| -> Vec<String> {
        llm.requests()[i]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(names(0), ["own", "extra"]);
    let result = llm.requests()[1]
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .text();
    assert!(result.contains("\"v\":1"), "{result}");
    // The next turn without them sees the loop's own tools only.
    drain(agent.start_turn(user("y"), cx())).await;
    assert_eq!(names(2), ["own"]);
    // A clash with the loop's own tools fails the turn, as between providers.
    let clash: Arc<dyn looopy_core::ToolProvider> =
        Arc::new(FnTools::new().echo("own", Duration::ZERO));
    let events =
        drain(agent.start_turn_with(user("z"), cx(), TurnInput::new().with_tools(clash))).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
}

#[tokio::test]
async fn llm_error_fails_the_turn_with_the_error_in_the_event() {
    let llm = ScriptedLlm::new().fail(LlmError::Server {
        retry_after: None,
        status: 503,
        message: "upstream down".into(),
    });
    let agent = AgentLoop::builder(llm).without_default_layers().build();
    let events = drain(agent.start_turn(user("x"), cx())).await;
    let last = final_event(&events);
    assert_eq!(last.state(), Some(TaskState::Failed));
    let meta = final_meta(&events);
    assert_eq!(meta["error"]["type"], "server_error");
    assert!(
        meta["error"]["message"]
            .as_str()
            .unwrap()
            .contains("upstream down")
    );
}

#[tokio::test]
async fn max_iterations_ends_with_one_call_without_tools() {
    let tools = FnTools::new().echo("t", Duration::ZERO);
    let call =
        |i: u32| LlmResponse::tool_calls("", vec![ToolCall::new(format!("c{i}"), "t", "{}")]);
    let llm = ScriptedLlm::new()
        .respond(call(1))
        .respond(call(2))
        .respond(LlmResponse::text("Here is my summary").with_usage(usage(1, 1)));
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .max_iterations(2)
        .build();
    let stream = agent.start_turn(user("loop"), cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    let meta = final_meta(&events);
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(meta["finishReason"], "max_iterations");
    assert_eq!(meta["maxIterationsReached"], true);
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].tools.is_empty());
    assert_eq!(reqs[2].tool_choice, None, "no tools, nothing to choose");
    assert_eq!(
        reqs[2].messages.last().unwrap().role,
        Role::User,
        "summary prompt appended"
    );
    // The summary prompt is not kept; the answer is.
    let history = handle.outcome().unwrap().history;
    assert_eq!(history.last().unwrap().text(), "Here is my summary");
    assert_eq!(history.len(), 1 + 2 * 2 + 1);
}

#[tokio::test]
async fn max_iterations_falls_back_to_a_fixed_text_when_the_last_call_fails() {
    let tools = FnTools::new().echo("t", Duration::ZERO);
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("c", "t", "{}")],
        ))
        .fail(LlmError::Timeout {
            message: "slow".into(),
        });
    let agent = AgentLoop::builder(llm)
        .tools(tools)
        .max_iterations(1)
        .build();
    let events = drain(agent.start_turn(user("x"), cx())).await;
    let last = final_event(&events);
    assert_eq!(last.state(), Some(TaskState::Completed));
    let EventPayload::StatusUpdate { status, .. } = &*last.payload else {
        unreachable!()
    };
    assert_eq!(
        status.message.as_ref().unwrap().text(),
        agent.config().fallback_final_text.as_ref()
    );
}

#[tokio::test]
async fn require_done_tool_keeps_going_until_the_done_tool() {
    let tools = FnTools::new().tool("done", |call, _| async move {
        ToolResult::text(&call.id, "ok").with_signal(ToolSignal::Done {
            message: Some("All finished".into()),
        })
    });
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("thinking..."))
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("d", "done", "{}")],
        ));
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .require_done_tool(true)
        .build();
    let events = drain(agent.start_turn(user("x"), cx())).await;
    let meta = final_meta(&events);
    assert_eq!(meta["finishReason"], "done_tool");
    assert_eq!(llm.request_count(), 2);
    let EventPayload::StatusUpdate { status, .. } = &*final_event(&events).payload else {
        unreachable!()
    };
    assert_eq!(status.message.as_ref().unwrap().text(), "All finished");
}

#[tokio::test]
async fn a_client_tool_ends_the_turn_input_required_with_the_pending_call() {
    let tools = FnTools::new()
        .tool("ask_user", |call, _| async move {
            ToolResult::text(&call.id, "pending").with_signal(ToolSignal::InputRequired)
        })
        .echo("local", Duration::ZERO);
    let llm = ScriptedLlm::new().respond(LlmResponse::tool_calls(
        "",
        vec![
            ToolCall::new("l", "local", "{}"),
            ToolCall::new("q", "ask_user", "{\"q\":\"color?\"}"),
        ],
    ));
    let stream = AgentLoop::builder(llm)
        .tools(tools)
        .build()
        .start_turn(user("x"), cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::InputRequired));
    let meta = final_meta(&events);
    assert_eq!(meta["pendingToolCalls"][0]["id"], "q");
    let history = handle.outcome().unwrap().history;
    // The local result is in; the client call waits for the client.
    assert_eq!(history.last().unwrap().tool_call_id.as_deref(), Some("l"));
}

#[tokio::test]
async fn cancellation_during_a_model_call_ends_the_turn_canceled() {
    let llm = ScriptedLlm::new().respond_after(Duration::from_secs(30), LlmResponse::text("late"));
    let cx = cx();
    let token = cx.cancel.clone();
    let stream = AgentLoop::builder(llm).build().start_turn(user("x"), cx);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    let events = tokio::time::timeout(Duration::from_secs(5), drain(stream))
        .await
        .expect("cancel is prompt");
    assert_eq!(final_event(&events).state(), Some(TaskState::Canceled));
}

/// A model that calls `hang`, a tool that never finishes; the flag says
/// whether the tool's future was dropped.
fn hanging_tool_turn() -> (FnTools, ScriptedLlm, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let d = dropped.clone();
    let tools = FnTools::new().tool("hang", move |call, _| {
        let flag = DropFlag(d.clone());
        async move {
            let _flag = flag;
            tokio::time::sleep(Duration::from_secs(30)).await;
            ToolResult::text(&call.id, "never")
        }
    });
    let llm = ScriptedLlm::new().respond(LlmResponse::tool_calls(
        "",
        vec![ToolCall::new("h", "hang", "{}")],
    ));
    (tools, llm, dropped)
}

#[tokio::test]
async fn cancellation_during_tools_drops_them() {
    let (tools, llm, dropped) = hanging_tool_turn();
    let cx = cx();
    let token = cx.cancel.clone();
    let stream = AgentLoop::builder(llm)
        .tools(tools)
        .build()
        .start_turn(user("x"), cx);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        token.cancel();
    });
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Canceled));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's future was dropped"
    );
}

#[tokio::test]
async fn dropping_the_stream_drops_the_turn() {
    let (tools, llm, dropped) = hanging_tool_turn();
    let mut stream = AgentLoop::builder(llm)
        .tools(tools)
        .build()
        .start_turn(user("x"), cx());
    use futures::StreamExt;
    while let Some(e) = stream.next().await {
        if e.kind() == "internal:tool-start" {
            break;
        }
    }
    assert!(!dropped.load(Ordering::SeqCst));
    drop(stream);
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn usage_is_summed_over_the_turn() {
    let tools = FnTools::new().echo("t", Duration::ZERO);
    let llm = ScriptedLlm::new()
        .respond(
            LlmResponse::tool_calls("", vec![ToolCall::new("c", "t", "{}")])
                .with_usage(usage(10, 3)),
        )
        .respond(LlmResponse::text("ok").with_usage(usage(20, 4)));
    let events = drain(
        AgentLoop::builder(llm)
            .tools(tools)
            .build()
            .start_turn(user("x"), cx()),
    )
    .await;
    let meta = final_meta(&events);
    assert_eq!(meta["usage"]["inputTokens"], 30);
    assert_eq!(meta["usage"]["outputTokens"], 7);
    assert_eq!(meta["iterations"], 2);
}

#[tokio::test]
async fn auth_and_ids_reach_every_tool_call() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let tools = FnTools::new().tool("who", move |call, cx| {
        s.lock().unwrap().push((
            cx.auth.as_ref().map(|a| a.principal.clone()),
            cx.task_id.to_string(),
        ));
        async move { ToolResult::text(&call.id, "me") }
    });
    let llm = calls_then(&[("1", "who", "{}"), ("2", "who", "{}")], "ok");
    let cx = cx().with_auth(looopy_core::AuthContext::new("alice"));
    drain(
        AgentLoop::builder(llm)
            .tools(tools)
            .build()
            .start_turn(user("x"), cx),
    )
    .await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|(p, t)| p.as_deref() == Some("alice") && t == "task-1")
    );
}

#[tokio::test]
async fn the_answer_is_one_message_in_the_history_the_outcome_and_the_final_event() {
    let llm = ScriptedLlm::new().respond(LlmResponse::text("the answer"));
    let agent = AgentLoop::builder(llm).build();
    let (events, outcome) = agent.start_turn(user("x"), cx()).collect_all().await;
    let outcome = outcome.unwrap();
    let answer = outcome.message.clone().unwrap();
    assert_eq!(answer.text(), "the answer");
    let EventPayload::StatusUpdate { status, .. } = &*final_event(&events).payload else {
        unreachable!()
    };
    // Shared, not copied: the same allocation everywhere.
    assert!(Arc::ptr_eq(status.message.as_ref().unwrap(), &answer));
    assert!(Arc::ptr_eq(outcome.history.last_shared().unwrap(), &answer));
}
