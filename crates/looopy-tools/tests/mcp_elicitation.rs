//! A server's questions for the person (`elicitation/create`): the call
//! pauses with an `input-required` result that carries the question; the
//! answer the next turn carries ([`ElicitationAnswers`]) reaches the paused
//! call, or, when the call is gone, meets the same question when the call
//! runs again. Against the Python fixture's `ask_count` and
//! server-everything's `trigger-elicitation-request`.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use looopy_core::elicitation::{ElicitationAnswer, ElicitationAnswers, ElicitationRequest};
use looopy_core::{ToolCall, ToolProvider, ToolResult, ToolSignal, TurnContext};
use looopy_tools::{McpToolProvider, StdioServer};
use serde_json::{Map, Value, json};
use support::cx;

fn ask(id: &str, item: &str) -> ToolCall {
    ToolCall::new(id, "py_ask_count", json!({ "item": item }).to_string())
}

/// A turn that carries `answer`.
fn answering(answer: ElicitationAnswer) -> TurnContext {
    cx().with_dep(ElicitationAnswers(vec![answer]))
}

fn content(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// The one question of a paused call's result.
fn question(result: &ToolResult) -> ElicitationRequest {
    assert_eq!(
        result.signal,
        Some(ToolSignal::InputRequired),
        "{}",
        result.text_content()
    );
    let mut asked = ElicitationRequest::from_result(result);
    assert_eq!(asked.len(), 1, "{asked:?}");
    asked.remove(0)
}

#[tokio::test]
async fn a_paused_call_goes_on_with_the_answer_and_a_misfit_is_asked_again() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let asked = question(&mcp.execute(&ask("call-1", "apples"), &cx()).await);
    assert_eq!(asked.tool_call_id, "call-1");
    assert_eq!(asked.tool, "py_ask_count");
    assert_eq!(asked.server, "py");
    assert_eq!(asked.message, "How many apples?");
    assert_eq!(
        asked.requested_schema["properties"]["count"]["type"],
        "integer"
    );
    assert_eq!(asked.error, None);

    // Content that does not fit is not sent: the same question, with why.
    let misfit = ElicitationAnswer::accept(&asked, content(json!({"unit": 3})));
    let again = question(
        &mcp.execute(&ask("call-1", "apples"), &answering(misfit))
            .await,
    );
    assert_eq!(again.request_id, asked.request_id);
    let error = again.error.unwrap();
    assert!(error.contains("count: is required"), "{error}");
    assert!(error.contains("unit: must be a string"), "{error}");

    // The answer: the paused call goes on (the server asked once).
    let fits = ElicitationAnswer::accept(&asked, content(json!({"count": 4})));
    let done = mcp
        .execute(&ask("call-1", "apples"), &answering(fits))
        .await;
    assert!(!done.is_error, "{}", done.text_content());
    assert_eq!(done.text_content(), "4 boxes of apples (asked 1)");

    // Declined: the server hears it.
    let asked = question(&mcp.execute(&ask("call-2", "pears"), &cx()).await);
    let done = mcp
        .execute(
            &ask("call-2", "pears"),
            &answering(ElicitationAnswer::decline(&asked)),
        )
        .await;
    assert_eq!(done.text_content(), "decline pears (asked 2)");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_call_run_again_gets_the_answer_when_it_asks_the_same_question() {
    let (Some(first), Some(second)) = (support::stdio_provider(), support::stdio_provider()) else {
        return;
    };
    let asked = question(&first.execute(&ask("call-1", "plums"), &cx()).await);
    // The paused call ends with its server (a restart).
    first.shutdown().await.unwrap();

    let answer = ElicitationAnswer::accept(&asked, content(json!({"count": 2, "unit": "crates"})));
    let done = second
        .execute(&ask("call-1", "plums"), &answering(answer.clone()))
        .await;
    assert!(!done.is_error, "{}", done.text_content());
    assert_eq!(done.text_content(), "2 crates of plums (asked 1)");

    // An answer to another question is not given: the call asks its own.
    let elsewhere = ElicitationAnswer {
        tool_call_id: "call-2".into(),
        ..answer
    };
    let own = question(
        &second
            .execute(&ask("call-2", "figs"), &answering(elsewhere))
            .await,
    );
    assert_eq!(own.message, "How many figs?");
    assert_ne!(own.request_id, asked.request_id);
    second.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_pause_longer_than_the_timeout_ends_the_call_and_the_answer_runs_it_again() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let mcp = mcp.with_elicitation_timeout(Duration::from_millis(200));
    let asked = question(&mcp.execute(&ask("call-1", "kiwis"), &cx()).await);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answer = ElicitationAnswer::accept(&asked, content(json!({"count": 5})));
    let done = mcp
        .execute(&ask("call-1", "kiwis"), &answering(answer))
        .await;
    assert!(!done.is_error, "{}", done.text_content());
    assert_eq!(done.text_content(), "5 boxes of kiwis (asked 2)");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn elicitation_is_advertised_unless_turned_off_and_then_refused() {
    let (Some(asking), Some(off)) = (support::stdio_provider(), support::stdio_provider()) else {
        return;
    };
    let caps = support::call(&asking, "caps", "py_capabilities", "").await;
    let caps: Value = serde_json::from_str(&caps.text_content()).unwrap();
    assert!(caps["elicitation"]["form"].is_object(), "{caps}");
    asking.shutdown().await.unwrap();

    let off = off.without_elicitation();
    let caps = support::call(&off, "caps", "py_capabilities", "").await;
    let caps: Value = serde_json::from_str(&caps.text_content()).unwrap();
    assert!(caps.get("elicitation").is_none(), "{caps}");
    let refused = off.execute(&ask("call-1", "limes"), &cx()).await;
    assert!(refused.is_error);
    assert_eq!(refused.signal, None);
    assert!(
        refused.text_content().contains("elicitation is off"),
        "{}",
        refused.text_content()
    );
    off.shutdown().await.unwrap();
}

#[tokio::test]
async fn server_everything_asks_with_its_whole_form_and_misfits_are_named() {
    let Some(bin) = support::server_everything() else {
        return;
    };
    let mcp = McpToolProvider::new(StdioServer::new(bin).arg("stdio"));
    let call = ToolCall::new("e1", "trigger-elicitation-request", "{}");
    let asked = question(&mcp.execute(&call, &cx()).await);
    let properties = &asked.requested_schema["properties"];
    for field in [
        "name",
        "check",
        "integer",
        "titledSingleSelectEnum",
        "untitledMultipleSelectEnum",
    ] {
        assert!(properties[field].is_object(), "{field}: {properties}");
    }

    let misfit = content(json!({
        "name": "Ada",
        "integer": 500,
        "untitledSingleSelectEnum": "Gunther",
        "untitledMultipleSelectEnum": ["Harp"],
        "titledSingleSelectEnum": "hero-9",
    }));
    let again = question(
        &mcp.execute(&call, &answering(ElicitationAnswer::accept(&asked, misfit)))
            .await,
    );
    let error = again.error.unwrap();
    for expected in [
        "integer: must be at most 100",
        "untitledSingleSelectEnum: must be one of",
        "untitledMultipleSelectEnum: \"Harp\" is not one of",
        "titledSingleSelectEnum: must be one of \"hero-1\"",
    ] {
        assert!(error.contains(expected), "{expected}: {error}");
    }

    let fits = content(json!({
        "name": "Ada",
        "check": true,
        "integer": 7.0,
        "untitledMultipleSelectEnum": ["Piano"],
        "titledSingleSelectEnum": "hero-2",
    }));
    let done = mcp
        .execute(&call, &answering(ElicitationAnswer::accept(&asked, fits)))
        .await;
    let text = done.text_content();
    assert!(!done.is_error, "{text}");
    assert!(text.contains("- Name: Ada"), "{text}");
    assert!(text.contains("- Favorite Integer: 7"), "{text}");
    assert!(text.contains("\"hero-2\""), "{text}");
    mcp.shutdown().await.unwrap();
}
