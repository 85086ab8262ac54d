//! The `metadata` of a `SendMessage` request reaches the turn's tools
//! (`TurnContext::metadata`), turn by turn: a tool reports what it saw, and
//! the next turn of the same task sees that turn's metadata, not the last.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_a2a::{A2aClient, SendRequest, SendResponse};
use looopy_core::{LlmResponse, TaskState, ToolCall, ToolDefinition, ToolProvider, ToolResult};
use looopy_testkit::ScriptedLlm;
use looopy_tools::LocalTools;
use serde_json::{Map, Value, json};

/// A tool that answers with the metadata its turn was given.
fn reporter() -> Arc<dyn ToolProvider> {
    Arc::new(LocalTools::new().raw_tool(
        ToolDefinition::without_parameters("report", "says what the turn was given"),
        |call: ToolCall, cx| async move {
            ToolResult::text(&call.id, Value::Object((*cx.metadata).clone()).to_string())
        },
    ))
}

fn metadata(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_of_each_request_reaches_the_tools_of_its_turn() {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("r1", "report", "{}")],
        ))
        .respond(LlmResponse::text("reported"))
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("r2", "report", "{}")],
        ))
        .respond(LlmResponse::text("reported again"));
    let (runner, _stores) = support::agent_runner(llm.clone(), vec![reporter()]);
    let server = support::start(runner).await;
    let client = A2aClient::new(&server.url);

    let mut first = SendRequest::text("report");
    first.metadata = metadata(json!({ "tenant": "acme", "plan": { "tier": "gold" } }));
    let SendResponse::Task(task) = client.send(&first).await.unwrap() else {
        panic!("expected a task");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    let mut second = SendRequest::text("report again").in_context(&task.context_id);
    second.metadata = metadata(json!({ "tenant": "globex" }));
    let SendResponse::Task(again) = client.send(&second).await.unwrap() else {
        panic!("expected a task");
    };
    assert_eq!(again.status.state, TaskState::Completed);

    // What the tool reported is the result the model read next.
    let requests = llm.requests();
    let reported = |request: usize, call: &str| -> Value {
        let result = requests[request]
            .messages
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some(call))
            .unwrap_or_else(|| panic!("no result of {call} in request {request}"));
        serde_json::from_str(&result.text()).unwrap()
    };
    let seen = reported(1, "r1");
    assert_eq!(seen["tenant"], "acme");
    assert_eq!(seen["plan"]["tier"], "gold");
    let seen = reported(3, "r2");
    assert_eq!(seen["tenant"], "globex");
    assert!(seen.get("plan").is_none(), "{seen}");
    server.stop().await;
}
