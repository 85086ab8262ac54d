//! One trace per request, through the real `looopy serve`: the A2A request
//! span is the root of everything the turn does (the server's turn, the
//! Agent's `agent.turn`, `invoke_agent`,
//! its iterations, model calls and tool calls), every parent is exported,
//! and the `traceparent` the model receives belongs to that trace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::{HashMap, HashSet};

use looopy_a2a::{A2aClient, SendRequest, SendResponse};
use looopy_core::TaskState;
use looopy_testkit::external::repo_root;
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use opentelemetry_proto::tonic::trace::v1::Span;
use support::{config_with_model, exported_spans, otlp_receiver, serve, stop, write_config};

const TOKEN: &str = "secret-token-never-in-spans";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One `SendMessage` through `looopy serve` whose model calls the MCP
/// fixture's `echo.text` (`echo_text` to the model) once, then answers; the spans the server
/// exported over OTLP once stopped, and the model fixture.
async fn traced_turn(
    python: &std::path::Path,
    extra_env: &[(&str, &str)],
) -> (Vec<Span>, OpenAiFixture) {
    let (otlp, received) = otlp_receiver().await;
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::json(openai::tool_calls_completion(&[(
        "call-1",
        "echo_text",
        r#"{"text":"hi"}"#,
    )])));
    llm.push(FixtureReply::Text("traced answer".into()));
    let dir = tempfile::tempdir().unwrap();
    let script = repo_root().join("crates/looopy-tools/tests/fixtures/mcp_server.py");
    let config = write_config(
        &dir,
        &format!(
            r#"
[agent]
name = "traced"
[llm]
base_url = "{base}"
model = "m"
[[tools.mcp]]
name = "fixture"
command = "{python}"
args = ["{script}", "stdio"]
[[auth.tokens]]
principal = "alice"
token = "{TOKEN}"
"#,
            base = llm.base_url(),
            python = python.display(),
            script = script.display(),
        ),
    );
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.as_str()),
        ("OTEL_SERVICE_NAME", "looopy-trace-test"),
    ];
    env.extend_from_slice(extra_env);
    let (server, url) = serve(&config, &env);
    let client = A2aClient::builder(&url).bearer_token(TOKEN).build();
    let answer = client.send(&SendRequest::text("trace me")).await.unwrap();
    let SendResponse::Task(task) = answer else {
        panic!("expected a task: {answer:?}");
    };
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    // SIGTERM flushes the exporter.
    let status = tokio::task::spawn_blocking(move || stop(server))
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    (exported_spans(&received), llm)
}

/// The string value of `key` on `span`.
fn attribute(span: &Span, key: &str) -> Option<String> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref())
        .and_then(|v| match &v.value {
            Some(Value::StringValue(s)) => Some(s.clone()),
            _ => None,
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_is_one_trace_from_the_a2a_span_to_the_tool_call() {
    let Some(python) = support::python() else {
        return;
    };
    let (exported, llm) = traced_turn(&python, &[]).await;
    let spans: Vec<&Span> = exported.iter().collect();
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), *s)).collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();

    // The turn's spans, under the SendMessage request.
    let find = |prefix: &str| -> &Span {
        spans
            .iter()
            .find(|s| s.name.starts_with(prefix))
            .unwrap_or_else(|| panic!("no span named {prefix}*: {names:?}"))
    };
    let parent_of = |s: &Span| -> &Span {
        by_id
            .get(s.parent_span_id.as_slice())
            .unwrap_or_else(|| panic!("the parent of '{}' was not exported: {names:?}", s.name))
    };
    let request = find("A2A SendMessage");
    let invoke = find("invoke_agent traced");
    let chat = find("chat ");
    let tool = find("execute_tool echo_text");
    assert!(
        request.parent_span_id.is_empty(),
        "the request span is the root"
    );
    // invoke_agent's ancestors lead to the request span: the Agent's
    // turn, then the server's.
    let agent_turn = parent_of(invoke);
    assert_eq!(agent_turn.name, "agent.turn", "{names:?}");
    assert_eq!(parent_of(agent_turn).name, "a2a.turn", "{names:?}");
    let mut up = parent_of(agent_turn);
    while up.span_id != request.span_id {
        up = parent_of(up);
    }
    // The Agent's turn carries its end and totals: two model calls.
    let on_turn = |key: &str| {
        agent_turn
            .attributes
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| a.value.as_ref())
            .and_then(|v| v.value.clone())
    };
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    assert_eq!(
        on_turn("a2a.task.state"),
        Some(Value::StringValue("completed".into()))
    );
    assert_eq!(on_turn("looopy.turn.iterations"), Some(Value::IntValue(2)));
    assert_eq!(parent_of(chat).name, "iteration 1", "{names:?}");
    assert_eq!(parent_of(parent_of(chat)).span_id, invoke.span_id);
    let mut up = parent_of(tool);
    while up.span_id != invoke.span_id {
        up = parent_of(up);
    }

    // One trace for the request, and every span has its parent exported.
    // The only other trace allowed is an MCP session's own (it outlives
    // the turn that opened it, so it is not part of the request).
    let sessions: HashSet<&Vec<u8>> = spans
        .iter()
        .filter(|s| s.name == "mcp.session")
        .map(|s| &s.trace_id)
        .collect();
    for s in &spans {
        assert!(
            s.trace_id == request.trace_id || sessions.contains(&s.trace_id),
            "'{}' is in another trace: {names:?}",
            s.name
        );
    }
    for s in &spans {
        if !s.parent_span_id.is_empty() {
            parent_of(s);
        }
    }

    // The model was called inside that trace.
    let trace = hex(&request.trace_id);
    for r in llm.requests() {
        let traceparent = r.header("traceparent").expect("traceparent to the model");
        assert!(
            traceparent.contains(&trace),
            "{traceparent} not in trace {trace}"
        );
    }

    // Content is not captured unless asked for.
    for key in ["gen_ai.input.messages", "gen_ai.output.messages"] {
        assert_eq!(attribute(chat, key), None, "{key} without opting in");
    }
    assert_eq!(attribute(tool, "gen_ai.tool.call.arguments"), None);

    // No secret in any attribute.
    for s in &spans {
        for a in &s.attributes {
            let value = format!("{:?}", a.value);
            assert!(
                !value.contains(TOKEN),
                "'{}' leaks the token in {}",
                s.name,
                a.key
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_used_as_a_tool_joins_the_callers_trace() {
    let (otlp, received) = otlp_receiver().await;
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.as_str()),
        ("OTEL_SERVICE_NAME", "looopy-trace-test"),
    ];
    // The callee: a second `looopy serve` with a model of its own.
    let callee_llm = OpenAiFixture::start().await.unwrap();
    callee_llm.push(FixtureReply::Text("the callee's answer".into()));
    let (_callee_dir, callee_config) =
        config_with_model(&callee_llm, "m", "[agent]\nname = \"callee\"\n");
    let (callee, callee_url) = serve(&callee_config, &otel);
    // The caller: its model asks the callee through the remote-agent tool.
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::json(openai::tool_calls_completion(&[(
        "call-r",
        "helper",
        r#"{"message":"please help"}"#,
    )])));
    llm.push(FixtureReply::Text("done with help".into()));
    let rest = format!(
        "[agent]\nname = \"caller\"\n[[tools.a2a]]\nname = \"helper\"\nurl = \"{callee_url}\"\n"
    );
    let (_dir, config) = config_with_model(&llm, "m", &rest);
    let (caller, url) = serve(&config, &otel);
    let answer = A2aClient::new(&url)
        .send(&SendRequest::text("ask the helper"))
        .await
        .unwrap();
    let SendResponse::Task(task) = answer else {
        panic!("expected a task: {answer:?}");
    };
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(callee_llm.requests().len(), 1, "the callee was asked");
    for process in [caller, callee] {
        let status = tokio::task::spawn_blocking(move || stop(process))
            .await
            .unwrap();
        assert!(status.success(), "{status:?}");
    }

    let exported = exported_spans(&received);
    let spans: Vec<&Span> = exported.iter().collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), *s)).collect();
    let caller_agent = spans
        .iter()
        .find(|s| s.name == "invoke_agent caller")
        .unwrap_or_else(|| panic!("{names:?}"));
    let callee_agent = spans
        .iter()
        .find(|s| s.name == "invoke_agent callee")
        .unwrap_or_else(|| panic!("{names:?}"));
    assert_eq!(
        callee_agent.trace_id, caller_agent.trace_id,
        "the callee's turn is in the caller's trace: {names:?}"
    );
    // The callee's spans hang under the caller's tool call.
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool helper")
        .unwrap_or_else(|| panic!("{names:?}"));
    let mut up = callee_agent;
    while up.span_id != tool.span_id {
        up = by_id
            .get(up.parent_span_id.as_slice())
            .unwrap_or_else(|| panic!("'{}' has no exported parent: {names:?}", up.name));
    }
}

/// With `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, the
/// `chat` spans carry what was sent and answered in the GenAI semantic
/// conventions' form, and the `execute_tool` span the call's arguments and
/// result; the bearer token appears in none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_capture_puts_the_messages_on_the_chat_and_tool_spans() {
    let Some(python) = support::python() else {
        return;
    };
    let (spans, _llm) = traced_turn(
        &python,
        &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")],
    )
    .await;
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 2, "two model calls");
    let json = |span: &Span, key: &str| -> serde_json::Value {
        let text = attribute(span, key).unwrap_or_else(|| panic!("no {key} on {}", span.name));
        serde_json::from_str(&text).unwrap()
    };
    let first_in = json(chats[0], "gen_ai.input.messages");
    assert_eq!(
        first_in[0],
        serde_json::json!({"role": "user", "parts": [{"type": "text", "content": "trace me"}]})
    );
    let first_out = json(chats[0], "gen_ai.output.messages");
    assert_eq!(first_out[0]["finish_reason"], "tool_calls", "{first_out}");
    let call = &first_out[0]["parts"][0];
    assert_eq!(call["type"], "tool_call", "{first_out}");
    assert_eq!(call["name"], "echo_text");
    assert_eq!(call["arguments"], serde_json::json!({"text": "hi"}));
    // The second call is sent the tool's answer, and answers.
    let second_in = json(chats[1], "gen_ai.input.messages");
    let response = second_in
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{second_in}"));
    assert_eq!(response["parts"][0]["type"], "tool_call_response");
    assert_eq!(response["parts"][0]["id"], "call-1");
    assert_eq!(response["parts"][0]["response"], "echo: hi");
    let second_out = json(chats[1], "gen_ai.output.messages");
    assert_eq!(
        second_out[0]["parts"][0],
        serde_json::json!({"type": "text", "content": "traced answer"})
    );
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool echo_text")
        .unwrap();
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"text":"hi"}"#)
    );
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.result").as_deref(),
        Some("echo: hi")
    );
    for s in &spans {
        for a in &s.attributes {
            assert!(
                !format!("{:?}", a.value).contains(TOKEN),
                "'{}' leaks the token in {}",
                s.name,
                a.key
            );
        }
    }
}
