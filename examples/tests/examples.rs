//! Runs each example program against real local servers: the OpenAI fixture
//! as the model, the provisioned MCP server, a Redis. `cargo test` builds
//! the examples next to this test's binary (`target/<profile>/examples`).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::Value;
use tokio::process::Command;

/// The example's binary, built by `cargo test -p looopy-examples`.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run this test with `cargo test -p looopy-examples`, which builds the examples",
        path.display()
    );
    path
}

/// The example as a command whose model is the fixture.
fn command(name: &str, model: &OpenAiFixture) -> Command {
    let mut c = Command::new(example(name));
    c.env("LOOOPY_LLM_BASE_URL", model.base_url())
        .env("LOOOPY_LLM_MODEL", "fixture-model")
        .env("LOOOPY_LLM_API_KEY", "sk-example")
        .env_remove("RUST_LOG")
        .kill_on_drop(true);
    c
}

/// Runs to the end; fails the test unless it exits 0. Returns stdout.
async fn run(mut c: Command) -> String {
    let out = tokio::time::timeout(Duration::from_secs(60), c.output())
        .await
        .expect("the example ran for over a minute")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The messages of the fixture's `n`th request.
fn messages(model: &OpenAiFixture, n: usize) -> Vec<Value> {
    model.requests()[n].body["messages"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn the_readme_program_is_the_turn_example() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../README.md")).unwrap();
    let section = readme.split("## A turn in code").nth(1).unwrap();
    let block = section.split("```rust\n").nth(1).unwrap();
    let block = block.split("\n```").next().unwrap();
    let program = std::fs::read_to_string(root.join("turn.rs")).unwrap();
    assert_eq!(
        block.trim(),
        program.trim(),
        "README.md and examples/turn.rs differ"
    );
}

#[tokio::test]
async fn turn_calls_the_typed_tool() {
    let model = OpenAiFixture::start().await.unwrap();
    model.push(FixtureReply::json(openai::tool_calls_completion(&[(
        "call-1",
        "add",
        r#"{"a": 2, "b": 40}"#,
    )])));
    model.push(FixtureReply::Text("2 + 40 = 42.".into()));
    let out = run(command("turn", &model)).await;
    assert!(out.ends_with("answer: 2 + 40 = 42.\n"), "{out}");
    assert!(out.contains("\"kind\":\"status-update\""), "{out}");
    // The tool's result went back to the model; the schema came from the type.
    let tools = &model.requests()[0].body["tools"];
    assert_eq!(tools[0]["function"]["name"], "add");
    assert_eq!(
        tools[0]["function"]["parameters"]["properties"]["a"]["description"],
        "The first number."
    );
    let sent = messages(&model, 1);
    let result = sent.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["content"], "42.0");
}

#[tokio::test]
async fn structured_retries_until_the_answer_reads() {
    let model = OpenAiFixture::start().await.unwrap();
    model.push(FixtureReply::Text(
        r#"{"destination": "Lisbon", "days": "two"}"#.into(),
    ));
    model.push(FixtureReply::Text(
        r#"{"destination": "Lisbon", "days": 2, "packing_list": ["sunscreen", "shoes"]}"#.into(),
    ));
    let out = run(command("structured", &model)).await;
    assert_eq!(
        out,
        "Lisbon for 2 days, pack: sunscreen, shoes\nattempts: 2\n"
    );
    let first = &model.requests()[0].body;
    assert_eq!(first["response_format"]["json_schema"]["name"], "Trip");
    assert_eq!(first["response_format"]["json_schema"]["strict"], true);
    let correction = messages(&model, 1).last().unwrap()["content"].clone();
    assert!(
        correction.as_str().unwrap().contains("at `days`"),
        "{correction}"
    );
}

#[tokio::test]
async fn mcp_runs_a_tool_of_the_python_server() {
    let Some(python) = looopy_testkit::external::require(
        "LOOOPY_MCP_PYTHON",
        looopy_testkit::external::repo_root().join(".tools/venv/bin/python"),
        "the Python venv with the `mcp` package",
    ) else {
        return;
    };
    let server = looopy_testkit::external::repo_root()
        .join("crates/looopy-tools/tests/fixtures/mcp_server.py");
    let model = OpenAiFixture::start().await.unwrap();
    model.push(FixtureReply::json(openai::tool_calls_completion(&[(
        "call-1",
        "echo_text",
        r#"{"text": "looopy"}"#,
    )])));
    model.push(FixtureReply::Text("It said looopy.".into()));
    let mut c = command("mcp", &model);
    c.arg(python).arg(server).arg("stdio");
    let out = run(c).await;
    assert!(out.starts_with("tools: "), "{out}");
    assert!(out.contains("echo_text"), "{out}");
    assert!(out.contains("tool result: echo: looopy\n"), "{out}");
    assert!(out.ends_with("answer: It said looopy.\n"), "{out}");
}

/// A running `axum_embed` on a free port; killed on drop.
struct Embedded {
    _child: tokio::process::Child,
    url: String,
}

async fn start_embedded(model: &OpenAiFixture) -> Embedded {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = command("axum_embed", model);
    c.env("PORT", port.to_string()).stdout(Stdio::null());
    let child = c.spawn().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while reqwest::get(format!("{url}/health")).await.is_err() {
        assert!(Instant::now() < deadline, "axum_embed did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Embedded { _child: child, url }
}

#[tokio::test]
async fn axum_embed_serves_the_app_and_the_agent() {
    let model = OpenAiFixture::start().await.unwrap();
    let app = start_embedded(&model).await;
    let hello = reqwest::get(format!("{}/api/hello", app.url))
        .await
        .unwrap();
    assert_eq!(hello.text().await.unwrap(), "hello from the app");
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", app.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "weather");
}

#[tokio::test]
async fn sub_agent_asks_the_remote_agent() {
    // One fixture answers both models, in order: the local model asks the
    // remote agent, the remote model answers it, the local model concludes.
    let model = OpenAiFixture::start().await.unwrap();
    let remote = start_embedded(&model).await;
    model.push(FixtureReply::json(openai::tool_calls_completion(&[(
        "call-1",
        "weather",
        r#"{"message": "Weather in Oslo tomorrow?"}"#,
    )])));
    model.push(FixtureReply::Text("Sunny, 18 degrees.".into()));
    model.push(FixtureReply::Text("Yes, bike.".into()));
    let mut c = command("sub_agent", &model);
    c.env("REMOTE_AGENT_URL", &remote.url);
    let out = run(c).await;
    assert!(out.contains("weather said: Sunny, 18 degrees.\n"), "{out}");
    assert!(out.ends_with("answer: Yes, bike.\n"), "{out}");
    // The remote agent's model got the local model's question.
    let asked = messages(&model, 1);
    assert!(
        asked
            .iter()
            .any(|m| m["role"] == "user" && m["content"] == "Weather in Oslo tomorrow?"),
        "{asked:?}"
    );
}

#[tokio::test]
async fn redis_memory_remembers_across_processes() {
    let redis = looopy_testkit::test_redis().unwrap();
    let prefix = format!("example-{}", std::process::id());
    let model = OpenAiFixture::start().await.unwrap();
    model.push(FixtureReply::Text("Hello Ada.".into()));
    model.push(FixtureReply::Text("Your name is Ada.".into()));
    for (text, answer, stored) in [
        ("My name is Ada.", "Hello Ada.", 2),
        ("What is my name?", "Your name is Ada.", 4),
    ] {
        let mut c = command("redis_memory", &model);
        c.env("LOOOPY_REDIS_URL", redis.url())
            .env("LOOOPY_REDIS_PREFIX", &prefix)
            .args(["conversation-1", text]);
        let out = run(c).await;
        assert_eq!(
            out,
            format!("answer: {answer}\nmessages stored: {stored}\n")
        );
    }
    // The second process's model saw the first process's exchange.
    let contents: Vec<Value> = messages(&model, 1)
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(
        contents[contents.len() - 3..],
        [
            Value::from("My name is Ada."),
            Value::from("Hello Ada."),
            Value::from("What is my name?")
        ]
    );
}

#[tokio::test]
async fn postgres_remembers_across_processes() {
    let Some(pg) = looopy_testkit::test_postgres_or_skip("postgres_remembers_across_processes")
    else {
        return;
    };
    let schema = format!("example_{}", std::process::id());
    let model = OpenAiFixture::start().await.unwrap();
    model.push(FixtureReply::Text("Hello Ada.".into()));
    model.push(FixtureReply::Text("Your name is Ada.".into()));
    for (text, answer, stored) in [
        ("My name is Ada.", "Hello Ada.", 2),
        ("What is my name?", "Your name is Ada.", 4),
    ] {
        let mut c = command("postgres", &model);
        c.env("LOOOPY_POSTGRES_URL", pg.url())
            .env("LOOOPY_POSTGRES_SCHEMA", &schema)
            .args(["conversation-1", text]);
        let out = run(c).await;
        assert_eq!(
            out,
            format!("answer: {answer}\nmessages stored: {stored}\n")
        );
    }
    // The second process's model saw the first process's exchange.
    let contents: Vec<Value> = messages(&model, 1)
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(
        contents[contents.len() - 3..],
        [
            Value::from("My name is Ada."),
            Value::from("Hello Ada."),
            Value::from("What is my name?")
        ]
    );
}

#[tokio::test]
async fn anthropic_sends_the_thinking_back_with_the_tool_result() {
    use looopy_testkit::anthropic_fixture::anthropic;
    use looopy_testkit::{SseEnd, SseReply};
    use serde_json::json;

    let model = OpenAiFixture::start().await.unwrap();
    model.push(FixtureReply::json(anthropic::message(
        vec![
            anthropic::thinking_block("Multiply with the tool.", "c2lnbmF0dXJl"),
            anthropic::tool_use_block("toolu_1", "multiply", json!({"a": 12.5, "b": 8})),
        ],
        "tool_use",
    )));
    model.push(
        SseReply::from_events(anthropic::text_stream(&["12.5 × 8 = ", "100."]))
            .end(SseEnd::Close)
            .into(),
    );
    let mut c = Command::new(example("anthropic"));
    c.env("ANTHROPIC_BASE_URL", model.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-example")
        .env("ANTHROPIC_MODEL", "claude-fixture")
        .env_remove("RUST_LOG")
        .kill_on_drop(true);
    let out = run(c).await;
    assert!(out.ends_with("answer: 12.5 × 8 = 100.\n"), "{out}");
    assert!(out.contains("thinking: Multiply with the tool."), "{out}");
    let second = &model.requests()[1].body["messages"][1]["content"][0];
    assert_eq!(
        second,
        &json!({"type": "thinking", "thinking": "Multiply with the tool.", "signature": "c2lnbmF0dXJl"})
    );
}

#[tokio::test]
async fn gemini_sends_the_thought_signature_back_with_the_tool_result() {
    use looopy_testkit::{SseEnd, SseReply};
    use serde_json::json;

    let model = OpenAiFixture::start().await.unwrap();
    model.push(FixtureReply::json(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "Multiply with the tool.", "thought": true},
            {"functionCall": {"name": "multiply", "args": {"a": 12.5, "b": 8}},
             "thoughtSignature": "c2lnbmF0dXJl"}]},
            "finishReason": "STOP"}]
    })));
    model.push(
        SseReply::new(vec![
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "12.5 × 8 = "}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "100."}]},
                   "finishReason": "STOP"}]}),
        ])
        .end(SseEnd::Close)
        .into(),
    );
    let mut c = Command::new(example("gemini"));
    c.env("GEMINI_BASE_URL", format!("{}/v1beta", model.url()))
        .env("GEMINI_API_KEY", "g-example")
        .env("GEMINI_MODEL", "gemini-fixture")
        .env_remove("GOOGLE_API_KEY")
        .env_remove("RUST_LOG")
        .kill_on_drop(true);
    let out = run(c).await;
    assert!(out.ends_with("answer: 12.5 × 8 = 100.\n"), "{out}");
    assert!(out.contains("thinking: Multiply with the tool."), "{out}");
    let requests = model.requests();
    assert_eq!(
        requests[1].path,
        "/v1beta/models/gemini-fixture:streamGenerateContent?alt=sse"
    );
    let call = &requests[1].body["contents"][1]["parts"][0];
    assert_eq!(
        call["thoughtSignature"], "c2lnbmF0dXJl",
        "{}",
        requests[1].body_text
    );
    assert_eq!(call["functionCall"]["name"], "multiply");
}
