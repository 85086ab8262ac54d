//! The context guard: every request of a turn is checked against the
//! model's context window before it is sent; a turn that outgrows it is
//! compacted (with a compactor) or ends `context_length`.
#![allow(clippy::unwrap_used)]

use crate::support;

use async_trait::async_trait;
use looopy_core::tokens::{HeuristicCounter, TokenCounter};
use looopy_core::{
    History, LlmError, LlmProvider, LlmRequest, LlmResponse, Message, Role, TaskState, ToolCall,
    ToolResult, TurnContext,
};
use looopy_loop::{AgentLoop, CONTEXT_LENGTH, TurnCompactor, TurnEnd};
use looopy_testkit::events::final_report;
use looopy_testkit::{ScriptStep, ScriptedLlm};
use std::sync::Arc;
use support::*;

/// A context window of this many tokens, none held back for the answer.
const WINDOW: u32 = 1200;

fn cx() -> TurnContext {
    TurnContext::new("task-ctx", "ctx-ctx")
}

/// A tool `big` whose every result is about 300 tokens.
fn big_tool() -> FnTools {
    FnTools::new().tool("big", |c, _| async move {
        ToolResult::text(&c.id, format!("{}:{}", c.id, "r".repeat(1200)))
    })
}

fn call(id: &str) -> LlmResponse {
    LlmResponse::tool_calls("", vec![ToolCall::new(id, "big", "{}")])
}

fn tokens(request: &LlmRequest) -> usize {
    HeuristicCounter.request(request)
}

fn tool_results(request: &LlmRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().split(':').next().unwrap_or("").to_owned())
        .collect()
}

/// Summarises by asking a model of its own (the turn's answers the
/// turn's script), with the ids of the results it covers.
struct AskTheModel(ScriptedLlm);

#[async_trait]
impl TurnCompactor for AskTheModel {
    async fn summarise(
        &self,
        _turns: &dyn LlmProvider,
        messages: &[Message],
        cx: &TurnContext,
    ) -> Result<Message, LlmError> {
        let covered: Vec<String> = messages
            .iter()
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        let request = LlmRequest {
            messages: History::from(vec![Message::user(format!(
                "summarise the results of {}",
                covered.join(",")
            ))]),
            ..LlmRequest::default()
        };
        let answer = self.0.call(request, cx).await?;
        Ok(Message::user(format!("summary: {}", answer.message.text())))
    }
}

#[tokio::test]
async fn a_request_over_the_window_is_never_sent_and_the_turn_ends_context_length() {
    let llm = ScriptedLlm::new()
        .respond(call("c1"))
        .respond(call("c2"))
        .respond(call("c3"))
        .respond(call("c4"))
        .respond(LlmResponse::text("never asked"));
    let agent = AgentLoop::builder(llm.clone())
        .tools(big_tool())
        .context_window_tokens(WINDOW)
        .build();
    let turn = agent.start_turn(History::from(vec![Message::user("go")]), cx());
    let handle = turn.handle();
    let events = drain(turn).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    let report = final_report(&events);
    assert_eq!(report.finish_reason, TurnEnd::Error);
    let error = report.error.unwrap();
    assert_eq!(error.kind, CONTEXT_LENGTH);
    assert!(
        error.message.contains("compaction on") && error.message.contains("1200"),
        "the message says what to change: {}",
        error.message
    );
    let requests = llm.requests();
    // Four results of 300 tokens do not fit 1200: the request after the
    // fourth (or earlier) was refused, not sent.
    assert!(requests.len() < 5, "{} requests", requests.len());
    for r in &requests {
        assert!(
            tokens(r) <= WINDOW as usize,
            "a request of {} was sent",
            tokens(r)
        );
    }
    // What the tools returned is kept in the turn's history all the same.
    let history = handle.history();
    assert_eq!(
        tool_texts(&history).len(),
        requests.len(),
        "every call the model made ran"
    );
}

#[tokio::test]
async fn a_long_turn_is_compacted_mid_turn_and_answers() {
    let llm = ScriptedLlm::new()
        .respond(call("c1"))
        .respond(call("c2"))
        .respond(call("c3"))
        .respond(call("c4"))
        .respond(call("c5"))
        .respond(call("c6"))
        .respond(LlmResponse::text("done"));
    let summariser = ScriptedLlm::new().with_fallback(ScriptStep::Respond(LlmResponse::text(
        "the tools returned long texts",
    )));
    let agent = AgentLoop::builder(llm.clone())
        .tools(big_tool())
        .context_window_tokens(WINDOW)
        .turn_compactor(Arc::new(AskTheModel(summariser.clone())))
        .build();
    let turn = agent.start_turn(History::from(vec![Message::user("go")]), cx());
    let handle = turn.handle();
    let events = drain(turn).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    let requests = llm.requests();
    for r in &requests {
        assert!(
            tokens(r) <= WINDOW as usize,
            "a request of {} was sent",
            tokens(r)
        );
    }
    assert_eq!(requests.len(), 7, "six calls and the answer, nothing else");
    let summaries = summariser.requests();
    assert!(!summaries.is_empty(), "the turn was compacted");
    assert!(
        summaries[0].messages.get(0).unwrap().text().contains("c1"),
        "the oldest round is summarised first: {}",
        summaries[0].messages.get(0).unwrap().text()
    );
    // The last request: the user's message, the summary, the newest rounds.
    let last = requests.last().unwrap();
    assert_eq!(last.messages.get(0).unwrap().text(), "go");
    assert!(
        last.messages
            .get(1)
            .unwrap()
            .text()
            .starts_with("summary: "),
        "{:?}",
        last.messages.get(1).unwrap()
    );
    let seen = tool_results(last);
    assert!(!seen.contains(&"c1".to_owned()), "{seen:?}");
    assert!(
        seen.contains(&"c6".to_owned()),
        "the newest result is sent whole: {seen:?}"
    );
    assert_tool_pairs_intact(last);
    // The turn's history keeps every result; only what was sent changed.
    assert_eq!(tool_texts(&handle.history()).len(), 6);
    assert_eq!(final_text(&events), "done");
}

#[tokio::test]
async fn a_model_the_registry_does_not_know_has_no_guard() {
    let llm = ScriptedLlm::new()
        .respond(call("c1"))
        .respond(call("c2"))
        .respond(call("c3"))
        .respond(call("c4"))
        .respond(call("c5"))
        .respond(LlmResponse::text("done"));
    let agent = AgentLoop::builder(llm.clone()).tools(big_tool()).build();
    let events = drain(agent.start_turn(History::from(vec![Message::user("go")]), cx())).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert!(tokens(&llm.requests()[5]) > WINDOW as usize);
}

/// Every tool result of `request` follows the call that asked for it.
fn assert_tool_pairs_intact(request: &LlmRequest) {
    let mut called = std::collections::HashSet::new();
    for m in request.messages.iter() {
        called.extend(m.tool_calls.iter().map(|c| c.id.clone()));
        if let Some(id) = &m.tool_call_id {
            assert!(called.contains(id), "result {id} without its call");
        }
    }
}
