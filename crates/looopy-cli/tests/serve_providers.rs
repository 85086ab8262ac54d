//! `looopy serve --model provider:model` through the real binary, each
//! vendor's API served by `@copilotkit/aimock`, two streamed turns of one
//! conversation sent by the official Python A2A SDK. The model thinks, then
//! calls a tool of an MCP server (`tests/fixtures/durable_tools.py`, over
//! stdio), then answers; the second turn goes back with the first one's
//! history.
//!
//! With Anthropic's extended thinking on, aimock refuses (400) a request
//! whose tool-using assistant turn does not begin with its `thinking` block
//! and a non-empty `signature`, as the Messages API does: a turn that
//! completes is one whose thinking went back on every later request, the
//! second turn's included.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::process::Command;

use looopy_testkit::aimock::Aimock;
use looopy_testkit::external::repo_root;
use serde_json::{Value, json};
use support::{Journal, durable_tools_section, json_output, serve_with_args, stop, write_config};

/// The fixtures: asked about Paris, the model thinks and calls the MCP
/// tool `quick_note`; given the result, it answers; asked about tomorrow (the
/// second turn), it answers again.
fn fixtures() -> Value {
    json!({"fixtures": [
        {
            "match": {"userMessage": "And tomorrow?"},
            "response": {
                "reasoning": "Tomorrow's forecast follows from today's.",
                "reasoningSignature": "sig-tomorrow-2",
                "content": "Tomorrow it rains in Paris."
            }
        },
        {
            "match": {"userMessage": "weather in Paris", "hasToolResult": false},
            "response": {
                "reasoning": "The user wants the weather; I will call the tool.",
                "reasoningSignature": "sig-paris-1",
                "toolCalls": [
                    {"id": "call_note_1", "name": "quick_note", "arguments": {"job": "paris"}}
                ]
            }
        },
        {
            "match": {"toolCallId": "call_note_1"},
            "response": {"content": "It is 18 degrees and sunny in Paris."}
        }
    ]})
}

/// The text of every event of a turn, joined.
fn texts(events: &Value) -> String {
    events.to_string()
}

/// The requests aimock journaled under `path`.
async fn journal(aimock: &Aimock, path: &str) -> Vec<Value> {
    let url = format!("{}/__aimock/journal", aimock.url());
    let entries: Vec<Value> = reqwest::get(url).await.unwrap().json().await.unwrap();
    entries
        .into_iter()
        .filter(|e| e["path"].as_str().is_some_and(|p| p.contains(path)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_two_streamed_turns_through_each_vendors_api() {
    let Some(python) = support::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture_file = dir.path().join("fixtures.json");
    std::fs::write(&fixture_file, fixtures().to_string()).unwrap();
    let Some(aimock) = Aimock::start(&fixture_file).await else {
        return;
    };
    let url = aimock.url().to_owned();
    let tool_calls = Journal::create(dir.path());
    let config = write_config(
        &dir,
        &format!(
            "[agent]\nname = \"vendor-agent\"\n\
             [llm.anthropic]\nthinking_budget_tokens = 1024\n\
             [llm.gemini]\nthinking_budget_tokens = 1024\n\
             [[auth.tokens]]\nprincipal = \"python\"\ntoken = \"py-token\"\n{}",
            durable_tools_section(&python, &tool_calls, "")
        ),
    );
    let cases = [
        (
            "anthropic:claude-sonnet-4-5",
            "/v1/messages",
            vec![
                ("ANTHROPIC_API_KEY", "a-test".to_owned()),
                ("ANTHROPIC_BASE_URL", url.clone()),
            ],
        ),
        (
            "gemini:gemini-2.5-flash",
            "gemini-2.5-flash",
            vec![
                ("GEMINI_API_KEY", "g-test".to_owned()),
                ("GEMINI_BASE_URL", format!("{url}/v1beta")),
            ],
        ),
        (
            "openai:gpt-4.1",
            "/v1/responses",
            vec![
                ("OPENAI_API_KEY", "sk-test".to_owned()),
                ("OPENAI_BASE_URL", format!("{url}/v1")),
            ],
        ),
    ];
    let script = repo_root().join("crates/looopy-cli/tests/fixtures/a2a_two_turns.py");
    for (model, path, env) in cases {
        let before = journal(&aimock, path).await.len();
        let calls_before = tool_calls.lines().len();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (server, server_url) = serve_with_args(&config, &["--model", model], &env);
        let (python, script) = (python.clone(), script.clone());
        let out = tokio::task::spawn_blocking(move || {
            Command::new(python)
                .arg(script)
                .arg(server_url)
                .args(["py-token", "What is the weather in Paris?", "And tomorrow?"])
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        stop(server);
        let out = json_output(&out);
        let first = texts(&out["first"]);
        assert!(
            first.contains("It is 18 degrees and sunny in Paris."),
            "{model}: {first}"
        );
        assert!(first.contains("TASK_STATE_COMPLETED"), "{model}: {first}");
        assert!(
            !first.contains("I will call the tool"),
            "{model}: the reasoning is not shown to the client: {first}"
        );
        let second = texts(&out["second"]);
        assert!(
            second.contains("Tomorrow it rains in Paris."),
            "{model}: {second}"
        );
        assert_eq!(
            tool_calls.lines().len(),
            calls_before + 1,
            "{model}: the MCP tool ran once: {:?}",
            tool_calls.lines()
        );
        let requests: Vec<Value> = journal(&aimock, path).await.split_off(before);
        assert_eq!(requests.len(), 3, "{model}: {requests:?}");
        for r in &requests {
            assert_eq!(r["response"]["status"], 200, "{model}: {r}");
        }
        // The second turn's request holds the first turn: the question,
        // the tool call and its result, and the answer.
        let last = requests[2]["body"].to_string();
        for needle in [
            "What is the weather in Paris?",
            "call_note_1",
            "noted paris",
            "sunny in Paris",
            "And tomorrow?",
        ] {
            assert!(last.contains(needle), "{model}: {needle} in {last}");
        }
    }
}
