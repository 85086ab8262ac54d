//! The agent as an MCP server, through the real binary: the official MCP
//! Python SDK calls `/mcp` of `looopy serve` (with the server's bearer
//! token, and without) and `looopy mcp` over stdio; the MCP inspector's CLI
//! (`@modelcontextprotocol/inspector --cli`) lists and calls its tool on
//! both. An agent with skills has a tool per skill, whose turns are told
//! the skill, and its results carry the artifacts the turn made.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use looopy_testkit::external::repo_root;
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, SseReply};
use serde_json::{Value, json};
use support::{config_with_model, json_output, last_user_turn, model_answering, serve, stop};

/// Answers each turn with the question it was asked; "slow please" waits
/// ten seconds first (long enough to be cancelled).
fn echo_model(body: &Value) -> FixtureReply {
    let (question, _) = last_user_turn(body);
    let answer = FixtureReply::Text(format!("You asked: {question}"));
    if question == "slow please" {
        FixtureReply::Delay(Duration::from_secs(10), Box::new(answer))
    } else {
        answer
    }
}

/// What `tests/fixtures/mcp_client.py`, run by `python` in `dir` with
/// `args`, saw.
async fn run_client(python: PathBuf, dir: PathBuf, args: Vec<String>) -> Value {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .current_dir(dir)
            .arg(repo_root().join("crates/looopy-cli/tests/fixtures/mcp_client.py"))
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    json_output(&out)
}

/// What `mcp-inspector --cli` with `args` printed (one JSON document: the
/// result, or the error), with whether it exited 0.
async fn run_inspector(inspector: PathBuf, args: Vec<String>) -> (bool, Value) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(inspector)
            .arg("--cli")
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    // A result goes to stdout, an error (as JSON too) to stderr.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let printed = if out.status.success() {
        &stdout
    } else {
        &stderr
    };
    let value = serde_json::from_str(printed.trim())
        .unwrap_or_else(|e| panic!("the inspector printed no JSON ({e}): {stdout}\n{stderr}"));
    (out.status.success(), value)
}

/// The checks both transports share.
fn check_turns(out: &Value) {
    assert_eq!(out["tools"][0]["name"], "send_message", "{out}");
    assert_eq!(out["tools"][0]["required"][0], "message", "{out}");
    assert_eq!(out["first"]["is_error"], false, "{out}");
    assert_eq!(
        out["first"]["text"][0], "You asked: first question",
        "{out}"
    );
    assert_eq!(out["first"]["structured"]["state"], "completed", "{out}");
    let conversation = out["first"]["structured"]["conversationId"]
        .as_str()
        .unwrap();
    // The second message named the first's conversation: it went on there.
    assert_eq!(
        out["second"]["structured"]["conversationId"], conversation,
        "{out}"
    );
    assert_eq!(
        out["second"]["text"][0], "You asked: second question",
        "{out}"
    );
    assert_ne!(
        out["second"]["structured"]["taskId"], out["first"]["structured"]["taskId"],
        "{out}"
    );
    // An empty message is refused with a message, and the session goes on.
    assert_eq!(out["empty_message"]["is_error"], true, "{out}");
    assert!(
        out["empty_message"]["text"].to_string().contains("message"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_mcp_sdk_calls_looopy_serve_at_mcp() {
    let Some(python) = support::python() else {
        return;
    };
    let llm = model_answering(echo_model).await;
    let rest = "[agent]\nname = \"mcp-agent\"\n[[auth.tokens]]\nprincipal = \"py\"\ntoken = \"mcp-token\"\n";
    let (_dir, config) = config_with_model(&llm, "m", rest);
    let (server, url) = serve(&config, &[]);
    let args = vec!["http".into(), format!("{url}/mcp"), "mcp-token".into()];
    let out = run_client(python, repo_root(), args).await;
    check_turns(&out);
    // The answer streamed as progress notifications.
    let progress = out["progress"].to_string();
    assert!(progress.contains("first question"), "{out}");
    // A cancelled call cancels its turn: the next message of that
    // conversation is answered instead of finding it busy.
    assert_eq!(out["cancelled"], true, "{out}");
    assert_eq!(out["after_cancel"]["is_error"], false, "{out}");
    assert_eq!(
        out["after_cancel"]["text"][0], "You asked: after cancel",
        "{out}"
    );
    assert_eq!(out["no_token"]["status"], 401, "{out}");
    assert_eq!(out["no_token"]["www_authenticate"], "Bearer", "{out}");
    stop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_mcp_sdk_runs_looopy_mcp_over_stdio() {
    let Some(python) = support::python() else {
        return;
    };
    let llm = model_answering(echo_model).await;
    let (dir, config) = config_with_model(&llm, "m", "[store]\nbackend = \"memory\"\n");
    // The SDK starts `looopy mcp` with a small default environment (no
    // LOOOPY_* variables of this process): the config file is all it reads.
    let args = vec![
        "stdio".into(),
        support::BIN.into(),
        config.display().to_string(),
    ];
    let out = run_client(python, dir.path().to_owned(), args).await;
    check_turns(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_lists_and_calls_the_agents_tool() {
    let Some(inspector) = looopy_testkit::external::mcp_inspector() else {
        return;
    };
    let llm = model_answering(echo_model).await;
    let rest = "[agent]\nname = \"mcp-agent\"\n[store]\nbackend = \"memory\"\n[[auth.tokens]]\nprincipal = \"inspector\"\ntoken = \"mcp-token\"\n";
    let (_dir, config) = config_with_model(&llm, "m", rest);
    let (server, url) = serve(&config, &[]);
    let http = |method: &str| {
        vec![
            format!("{url}/mcp"),
            "--transport".into(),
            "http".into(),
            "--header".into(),
            "Authorization: Bearer mcp-token".into(),
            "--method".into(),
            method.into(),
        ]
    };
    // Over streamable HTTP, with the server's token.
    let (ok, listed) = run_inspector(inspector.clone(), http("tools/list")).await;
    assert!(ok, "{listed}");
    let tools = listed["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{listed}");
    assert_eq!(tools[0]["name"], "send_message");
    assert_eq!(
        tools[0]["inputSchema"]["required"][0], "message",
        "{listed}"
    );
    let mut call = http("tools/call");
    call.extend(
        [
            "--tool-name",
            "send_message",
            "--tool-arg",
            "message=hello inspector",
        ]
        .map(String::from),
    );
    let (ok, called) = run_inspector(inspector.clone(), call).await;
    assert!(ok, "{called}");
    assert_eq!(called["isError"], false, "{called}");
    assert_eq!(
        called["content"][0]["text"], "You asked: hello inspector",
        "{called}"
    );
    assert_eq!(
        called["structuredContent"]["state"], "completed",
        "{called}"
    );
    // Without the token the inspector is refused (it would start OAuth).
    let (ok, refused) = run_inspector(
        inspector.clone(),
        vec![
            format!("{url}/mcp"),
            "--transport".into(),
            "http".into(),
            "--method".into(),
            "tools/list".into(),
        ],
    )
    .await;
    assert!(!ok, "{refused}");
    assert_eq!(refused["error"]["code"], "auth_required", "{refused}");
    stop(server);
    // Over stdio: the inspector starts `looopy mcp` itself.
    let stdio = vec![
        "--method".into(),
        "tools/list".into(),
        "--".into(),
        support::BIN.into(),
        "mcp".into(),
        "--config".into(),
        config.display().to_string(),
    ];
    let (ok, listed) = run_inspector(inspector, stdio).await;
    assert!(ok, "{listed}");
    assert_eq!(listed["tools"][0]["name"], "send_message", "{listed}");
}

/// The system prompt of an OpenAI chat request (empty without one).
fn system_prompt(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "system")
        .map(support::message_text)
        .unwrap_or_default()
}

/// Answers with the question and the system prompt it was sent; asked
/// "make a report", first creates the artifact `report` with the
/// built-in artifact tool.
fn skilled_model(body: &Value) -> FixtureReply {
    let (question, results) = last_user_turn(body);
    if question == "make a report" && results.is_empty() {
        let args = json!({"artifact_id": "report", "name": "Report", "text": "Sales rose."});
        let args = args.to_string();
        if body["stream"] == true {
            return FixtureReply::Sse(SseReply::new(vec![
                openai::tool_call_start_chunk(0, "call-report", "create_artifact"),
                openai::tool_args_chunk(0, &args),
                openai::finish_chunk("tool_calls"),
            ]));
        }
        let calls = [("call-report", "create_artifact", args.as_str())];
        return FixtureReply::json(openai::tool_calls_completion(&calls));
    }
    FixtureReply::Text(format!(
        "You asked: {question} | told: {}",
        system_prompt(body)
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_skills_has_a_tool_per_skill_on_mcp_and_lists_them_on_its_card() {
    let Some(python) = support::python() else {
        return;
    };
    let llm = model_answering(skilled_model).await;
    let rest = "[agent]\nname = \"skilled\"\nsystem_prompt = \"Be brief.\"\nartifact_tools = true\n\
                [[agent.skills]]\nid = \"summarise\"\nname = \"Summarise\"\n\
                description = \"Summarises a text in a line\"\ntags = [\"text\"]\n\
                examples = [\"Summarise this note\"]\n\
                [[agent.skills]]\nid = \"report\"\ndescription = \"Writes a report as an artifact\"\n\
                [store]\nbackend = \"memory\"\n\
                [[auth.tokens]]\nprincipal = \"py\"\ntoken = \"mcp-token\"\n";
    let (dir, config) = config_with_model(&llm, "m", rest);
    let (server, url) = serve(&config, &[]);

    // The card lists the skills as configured.
    let card: Value = reqwest::Client::new()
        .get(format!("{url}/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let skills = card["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 2, "{card}");
    assert_eq!(skills[0]["id"], "summarise", "{card}");
    assert_eq!(skills[0]["name"], "Summarise", "{card}");
    assert_eq!(skills[0]["description"], "Summarises a text in a line");
    assert_eq!(skills[0]["tags"], json!(["text"]), "{card}");
    assert_eq!(skills[0]["examples"], json!(["Summarise this note"]));
    assert_eq!(skills[1]["name"], "report", "the id names it: {card}");

    let args = vec!["skills".into(), format!("{url}/mcp"), "mcp-token".into()];
    let out = run_client(python.clone(), repo_root(), args).await;
    // A tool per skill, named by its id, described by its description,
    // and no `send_message`.
    let tools = out["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["summarise", "report"], "{out}");
    assert_eq!(tools[0]["title"], "Summarise", "{out}");
    assert_eq!(tools[0]["description"], "Summarises a text in a line");
    assert_eq!(tools[1]["required"], json!(["message"]), "{out}");
    assert!(
        out["send_message"]
            .as_str()
            .unwrap()
            .contains("unknown tool"),
        "{out}"
    );

    // The turn was told the skill, after the agent's own system prompt.
    let summarise = &out["calls"]["summarise"];
    assert_eq!(summarise["is_error"], false, "{out}");
    assert_eq!(
        summarise["content"][0]["text"],
        "You asked: sum this up | told: Be brief.\n\n\
         The caller asked for the skill 'Summarise': Summarises a text in a line",
        "{out}"
    );
    assert_eq!(summarise["content"].as_array().unwrap().len(), 1, "{out}");
    assert!(summarise["structured"].get("artifacts").is_none(), "{out}");

    // The artifact the turn's tool made follows the answer, and its tool
    // call came as progress.
    let report = &out["calls"]["report"];
    let content = report["content"].as_array().unwrap();
    assert!(
        content[0]["text"].as_str().unwrap().starts_with(
            "You asked: make a report | told: Be brief.\n\nThe caller asked for the skill 'report'"
        ),
        "{out}"
    );
    assert_eq!(
        content[1],
        json!({"type": "text", "text": "Sales rose."}),
        "{out}"
    );
    assert_eq!(content.len(), 2, "{out}");
    assert_eq!(
        report["structured"]["artifacts"],
        json!([{"artifactId": "report", "name": "Report", "parts": 1}]),
        "{out}"
    );
    let progress: Vec<&str> = report["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let start = progress
        .iter()
        .position(|p| *p == "calling tool create_artifact");
    let end = progress
        .iter()
        .position(|p| p.starts_with("tool create_artifact done in "));
    assert!(start.is_some() && start < end, "{progress:?}");
    assert!(
        !progress.contains(&"Sales rose."),
        "the artifact is no chunk of the answer: {progress:?}"
    );
    stop(server);

    // `looopy mcp` on stdio offers the same tools.
    let args = vec![
        "skills-stdio".into(),
        support::BIN.into(),
        config.display().to_string(),
    ];
    let stdio = run_client(python, dir.path().to_owned(), args).await;
    assert_eq!(stdio["tools"], out["tools"], "{stdio}");
}

#[test]
fn looopy_mcp_refuses_skills_that_cannot_be_tools() {
    let dir = tempfile::tempdir().unwrap();
    let skill = |id: &str| format!("[[agent.skills]]\nid = \"{id}\"\ndescription = \"d\"\n");
    for (skills, named) in [
        (
            format!("{}{}", skill("triage"), skill("triage")),
            "'triage': two skills have this id",
        ),
        (
            skill("triage tickets"),
            "'triage tickets': the id is its MCP tool's name",
        ),
    ] {
        let config = support::write_config(&dir, &skills);
        // Stdin closed: a server that started would end at once, and well.
        let out = Command::new(support::BIN)
            .arg("mcp")
            .arg("--config")
            .arg(&config)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{skills}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{skills}: {err}");
    }
}
