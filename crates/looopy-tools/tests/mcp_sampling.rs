//! What an MCP server asks of the client during a call: the agent's model
//! (`sampling/createMessage`) and the roots (`roots/list`), against the
//! Python fixture's `sample` and `roots` tools, through an agent loop; and
//! sampling that waits for a person's approval (the call pauses with the
//! question, as for elicitation).
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::{
    History, LlmError, LlmProvider, LlmRequest, LlmResponse, Message, ToolCall, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;
use looopy_tools::{McpRoot, McpSampling, McpToolProvider};

/// The text of the last message of a request: the tool's result, for the
/// request after a tool call.
fn last_text(request: &LlmRequest) -> String {
    request.messages.iter().last().unwrap().text()
}

/// Runs one turn of `llm`'s script (which calls `py_sample`),
/// and returns what the model was asked, in order.
async fn turn(mcp: McpToolProvider, llm: ScriptedLlm) -> Vec<LlmRequest> {
    let agent = AgentLoop::builder(llm.clone()).tools(mcp.clone()).build();
    let history = History::from(vec![Message::user("Ask the server.")]);
    let (_events, outcome) = agent
        .start_turn(history, TurnContext::new("t1", "c1"))
        .collect_all()
        .await;
    assert!(outcome.is_some(), "the turn ended");
    mcp.shutdown().await.unwrap();
    llm.requests()
}

fn sample_call(arguments: &str) -> LlmResponse {
    LlmResponse::tool_calls("", vec![ToolCall::new("call-1", "py_sample", arguments)])
}

#[tokio::test]
async fn the_agents_model_answers_a_sampling_request_of_a_tool() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    // The model calls the tool, answers the server's sampling request,
    // then reads the tool's result and ends the turn.
    let llm = ScriptedLlm::new()
        .respond(sample_call(r#"{"prompt": "Capital of France?"}"#))
        .respond(LlmResponse::text("Paris."))
        .respond(LlmResponse::text("done"));
    let mcp = mcp.with_sampling(McpSampling::new(Arc::new(llm.clone())));
    let requests = turn(mcp, llm).await;
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let sampled = &requests[1];
    assert_eq!(
        sampled.system_prompt.as_deref(),
        Some("Answer in one sentence.")
    );
    assert_eq!(sampled.max_tokens, Some(100));
    assert!(sampled.tools.is_empty(), "sampling offers no tools");
    assert_eq!(last_text(sampled), "Capital of France?");
    assert_eq!(last_text(&requests[2]), "scripted: Paris.");
}

/// The capabilities the server saw.
async fn advertised(mcp: &McpToolProvider) -> serde_json::Value {
    let r = support::call(mcp, "caps", "py_capabilities", "").await;
    assert!(!r.is_error, "{}", r.text_content());
    serde_json::from_str(&r.text_content()).unwrap()
}

#[tokio::test]
async fn sampling_and_roots_are_advertised_only_when_offered() {
    let (Some(plain), Some(offering)) = (support::stdio_provider(), support::stdio_provider())
    else {
        return;
    };
    let caps = advertised(&plain).await;
    assert!(caps.get("sampling").is_none(), "{caps}");
    assert!(caps.get("roots").is_none(), "{caps}");
    plain.shutdown().await.unwrap();

    let offering = offering
        .with_sampling(McpSampling::new(Arc::new(ScriptedLlm::new())))
        .with_roots([McpRoot::new("file:///srv").unwrap()]);
    let caps = advertised(&offering).await;
    assert!(caps["sampling"].is_object(), "{caps}");
    assert!(caps["roots"].is_object(), "{caps}");
    offering.shutdown().await.unwrap();
}

#[tokio::test]
async fn with_sampling_off_the_tool_gets_an_error_and_the_turn_goes_on() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let llm = ScriptedLlm::new()
        .respond(sample_call(r#"{"prompt": "Capital of France?"}"#))
        .respond(LlmResponse::text("done"));
    let requests = turn(mcp, llm).await;
    assert_eq!(
        requests.len(),
        2,
        "the model was not sampled: {requests:#?}"
    );
    let result = last_text(&requests[1]);
    assert!(result.contains("sampling is off"), "{result}");
}

#[tokio::test]
async fn a_request_over_the_token_cap_is_refused_naming_the_cap() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let llm = ScriptedLlm::new()
        .respond(sample_call(
            r#"{"prompt": "Write a novel.", "max_tokens": 5000}"#,
        ))
        .respond(LlmResponse::text("done"));
    let mcp = mcp.with_sampling(McpSampling::new(Arc::new(llm.clone())).with_max_tokens(200));
    let requests = turn(mcp, llm).await;
    assert_eq!(
        requests.len(),
        2,
        "the model was not sampled: {requests:#?}"
    );
    let result = last_text(&requests[1]);
    assert!(
        result.contains("maxTokens 5000") && result.contains("at most 200"),
        "{result}"
    );
}

/// A model of a given name that answers with its name.
struct Named(&'static str);

#[async_trait]
impl LlmProvider for Named {
    async fn call(&self, _r: LlmRequest, _cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        Ok(LlmResponse::text(format!("{} here", self.0)))
    }
    fn model_name(&self) -> &str {
        self.0
    }
}

#[tokio::test]
async fn a_hint_naming_a_known_model_picks_it() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let sampling = McpSampling::new(Arc::new(Named("gpt-4.1")))
        .with_model(Arc::new(Named("claude-sonnet-4-5")));
    let mcp = mcp.with_sampling(sampling);
    let picked = support::call(
        &mcp,
        "1",
        "py_sample",
        r#"{"prompt": "hi", "hint": "claude"}"#,
    )
    .await;
    assert_eq!(
        picked.text_content(),
        "claude-sonnet-4-5: claude-sonnet-4-5 here"
    );
    let own = support::call(
        &mcp,
        "2",
        "py_sample",
        r#"{"prompt": "hi", "hint": "llama"}"#,
    )
    .await;
    assert_eq!(own.text_content(), "gpt-4.1: gpt-4.1 here");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_configured_roots_are_listed_to_the_server() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let mcp = mcp.with_roots([
        McpRoot::new("file:///srv/project")
            .unwrap()
            .with_name("project"),
        McpRoot::new("file:///tmp/scratch").unwrap(),
    ]);
    let r = support::call(&mcp, "1", "py_roots", "").await;
    assert!(!r.is_error, "{}", r.text_content());
    let roots: serde_json::Value = serde_json::from_str(&r.text_content()).unwrap();
    assert_eq!(
        roots,
        serde_json::json!([
            {"uri": "file:///srv/project", "name": "project"},
            {"uri": "file:///tmp/scratch", "name": null}
        ])
    );
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn sampling_and_roots_work_over_streamable_http_too() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::HttpFixture::start(&python).await;
    let mcp = McpToolProvider::new(looopy_tools::HttpServer::new(server.url.clone()))
        .with_sampling(McpSampling::new(Arc::new(Named("gpt-4.1"))))
        .with_roots([McpRoot::new("file:///srv/project").unwrap()]);
    let r = support::call(&mcp, "1", "sample", r#"{"prompt": "hi"}"#).await;
    assert_eq!(r.text_content(), "gpt-4.1: gpt-4.1 here");
    let r = support::call(&mcp, "2", "roots", "").await;
    assert!(
        r.text_content().contains("file:///srv/project"),
        "{}",
        r.text_content()
    );
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn with_approval_a_sampling_request_waits_for_a_persons_yes() {
    use looopy_core::elicitation::{ElicitationAnswer, ElicitationAnswers, ElicitationRequest};
    use looopy_core::{ToolProvider, ToolSignal};

    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let llm = ScriptedLlm::new().respond(LlmResponse::text("Paris."));
    let mcp = mcp.with_sampling(McpSampling::new(Arc::new(llm.clone())).with_approval());
    let question = |result: &looopy_core::ToolResult| {
        assert_eq!(
            result.signal,
            Some(ToolSignal::InputRequired),
            "{}",
            result.text_content()
        );
        ElicitationRequest::from_result(result).remove(0)
    };
    let answering = |answer: ElicitationAnswer| {
        TurnContext::new("t", "c").with_dep(ElicitationAnswers(vec![answer]))
    };
    let allow = |allow: bool| {
        serde_json::json!({ "allow": allow })
            .as_object()
            .cloned()
            .unwrap()
    };

    // The request waits: its call pauses with the question, the model is
    // not called yet.
    let call = sample_call(r#"{"prompt": "Capital of France?"}"#)
        .message
        .tool_calls[0]
        .clone();
    let asked = question(&mcp.execute(&call, &TurnContext::new("t", "c")).await);
    assert!(
        asked
            .message
            .contains("MCP server 'py' asks the agent's model (up to 100 tokens)"),
        "{}",
        asked.message
    );
    assert!(
        asked.message.contains("Capital of France?"),
        "{}",
        asked.message
    );
    assert_eq!(
        asked.requested_schema["properties"]["allow"]["type"],
        "boolean"
    );
    assert!(llm.requests().is_empty(), "asked before sampling");

    // Allowed: the model answers and the tool goes on.
    let done = mcp
        .execute(
            &call,
            &answering(ElicitationAnswer::accept(&asked, allow(true))),
        )
        .await;
    assert!(!done.is_error, "{}", done.text_content());
    assert!(
        done.text_content().ends_with(": Paris."),
        "{}",
        done.text_content()
    );
    assert_eq!(llm.requests().len(), 1);

    // Not allowed: the server is refused and the model is not called.
    let call = ToolCall::new("call-2", "py_sample", r#"{"prompt": "Capital of Peru?"}"#);
    let asked = question(&mcp.execute(&call, &TurnContext::new("t", "c")).await);
    let refused = mcp
        .execute(
            &call,
            &answering(ElicitationAnswer::accept(&asked, allow(false))),
        )
        .await;
    assert!(refused.is_error, "{}", refused.text_content());
    assert!(
        refused.text_content().contains("did not allow"),
        "{}",
        refused.text_content()
    );
    assert_eq!(llm.requests().len(), 1);
    mcp.shutdown().await.unwrap();
}
