//! Human approval of tool calls through the real `looopy serve` binary,
//! driven by the official Python A2A SDK (a2a-sdk 1.x): `[agent]
//! approve_tools` in `looopy.toml` makes a call wait; the task ends
//! `input-required` with the question; a data part approves, denies or edits
//! it and the turn completes, with the MCP tool run (or not) as decided. On
//! Redis, a second binary finishes a turn the first one asked about. The
//! chat page (headless Chromium) and `looopy chat` (a pseudo-terminal) ask
//! and answer too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use looopy_testkit::external::{repo_root, require};
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::{Value, json};
use support::{serve_running, write_config};

fn python() -> Option<PathBuf> {
    require(
        "LOOOPY_A2A_PYTHON",
        repo_root().join(".tools/venv/bin/python"),
        "the Python venv with a2a-sdk and mcp",
    )
}

/// The model: asks for `quick_note` on the user's job; once the call's
/// result is in, answers `final: <result>`.
fn model(body: &Value) -> FixtureReply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last_user = messages
        .iter()
        .rposition(|m| m["role"] == "user")
        .unwrap_or(0);
    let results: Vec<String> = messages[last_user..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(support::message_text)
        .collect();
    if results.is_empty() {
        let job = support::message_text(&messages[last_user]);
        let args = json!({ "job": job }).to_string();
        return FixtureReply::json(openai::tool_calls_completion(&[(
            &format!("call-{job}"),
            "quick_note",
            &args,
        )]));
    }
    FixtureReply::Text(format!("final: {}", results.join(" | ")))
}

struct Setup {
    dir: tempfile::TempDir,
    config: PathBuf,
    python: PathBuf,
    _llm: OpenAiFixture,
}

impl Setup {
    /// A `looopy.toml` with the MCP tools of `durable_tools.py`, calls of
    /// `quick_note` waiting for approval, and `store` as its `[store]`.
    async fn new(store: &str) -> Option<Setup> {
        let python = python()?;
        let respond: Arc<dyn Fn(&Value) -> FixtureReply + Send + Sync> = Arc::new(model);
        let llm = OpenAiFixture::start_responder(Duration::ZERO, respond)
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.txt");
        std::fs::write(&journal, "").unwrap();
        let script = repo_root().join("crates/looopy-cli/tests/fixtures/durable_tools.py");
        let config = write_config(
            &dir,
            &format!(
                r#"
[agent]
name = "approver"
approve_tools = ["quick_note"]
[llm]
base_url = "{base}"
model = "m"
[[tools.mcp]]
name = "durable"
command = "{python}"
args = ["{script}"]
env = {{ JOURNAL = "{journal}" }}
[[auth.tokens]]
principal = "python"
token = "py-token"
{store}
"#,
                base = llm.base_url(),
                python = python.display(),
                script = script.display(),
                journal = journal.display(),
            ),
        );
        Some(Setup {
            dir,
            config,
            python,
            _llm: llm,
        })
    }

    fn journal(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("journal.txt"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Runs the client script with these arguments; its JSON output.
    async fn client(&self, args: Vec<String>) -> Value {
        let python = self.python.clone();
        let script = repo_root().join("crates/looopy-cli/tests/fixtures/approval_client.py");
        let out = tokio::task::spawn_blocking(move || {
            Command::new(python)
                .arg(script)
                .args(args)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.lines().last().unwrap_or(""))
            .unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }

    async fn ask(&self, url: &str, job: &str) -> Value {
        self.client(vec![
            "ask".into(),
            url.into(),
            "py-token".into(),
            job.into(),
        ])
        .await
    }

    async fn answer(&self, url: &str, task: &Value, approval: Value) -> Value {
        self.client(vec![
            "answer".into(),
            url.into(),
            "py-token".into(),
            task["id"].as_str().unwrap().into(),
            task["contextId"].as_str().unwrap().into(),
            approval.to_string(),
        ])
        .await
    }
}

/// The approval request of an `input-required` task's status message.
fn approval_request(task: &Value) -> Value {
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    task["status"]["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| p["data"]["approvalRequests"].get(0).cloned())
        .unwrap_or_else(|| panic!("no approval request in {task}"))
}

/// The text of a task's status message.
fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<String>()
        })
        .unwrap_or_default()
}

/// Asks about `job`: the task waits with the question; nothing ran.
async fn asked(setup: &Setup, url: &str, job: &str) -> (Value, Value) {
    let out = setup.ask(url, job).await;
    let task = out["task"].clone();
    let request = approval_request(&task);
    assert_eq!(request["name"], "quick_note");
    assert_eq!(request["toolCallId"], format!("call-{job}"));
    assert_eq!(request["arguments"]["job"], job);
    let question = request["question"].as_str().unwrap();
    assert!(question.contains("quick_note"), "{question}");
    assert!(status_text(&task).contains(question), "{task}");
    assert!(
        !setup.journal().contains(&format!("quick call-{job}")),
        "the tool ran before approval: {:?}",
        setup.journal()
    );
    (task, request)
}

fn decision(request: &Value, decision: &str) -> Value {
    json!({ "toolCallId": request["toolCallId"], "decision": decision })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_approves_and_denies_tool_calls_of_looopy_serve() {
    let Some(setup) = Setup::new("").await else {
        return;
    };
    let (server, url) = serve_running(&setup.config, &[]);

    // Approved: the tool runs once and the model reads its result.
    let (task, request) = asked(&setup, &url, "one").await;
    let done = setup
        .answer(&url, &task, decision(&request, "approve"))
        .await;
    let done = &done["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(status_text(done), "final: noted one");
    assert_eq!(
        setup
            .journal()
            .iter()
            .filter(|l| l.starts_with("quick"))
            .count(),
        1
    );

    // Denied: the tool does not run; the model reads the denial.
    let (task, request) = asked(&setup, &url, "two").await;
    let mut deny = decision(&request, "deny");
    deny["reason"] = json!("not today");
    let done = setup.answer(&url, &task, deny).await;
    let done = &done["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(
        status_text(done),
        "final: Error: Tool call denied: not today"
    );
    assert_eq!(
        setup
            .journal()
            .iter()
            .filter(|l| l.starts_with("quick"))
            .count(),
        1
    );

    // A malformed decision asks again: the task still waits, with the error
    // and the same request; nothing ran.
    let (task, request) = asked(&setup, &url, "three").await;
    let bad = setup
        .answer(&url, &task, decision(&request, "perhaps"))
        .await;
    let again = &bad["task"];
    assert_eq!(approval_request(again), request, "{bad}");
    let message = status_text(again);
    assert!(message.contains("invalid approval decision"), "{message}");
    assert!(
        message.contains(request["question"].as_str().unwrap()),
        "{message}"
    );
    assert!(!setup.journal().contains(&"quick call-three".to_owned()));
    let done = setup
        .answer(&url, &task, decision(&request, "approve"))
        .await;
    assert_eq!(
        done["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    assert_eq!(status_text(&done["task"]), "final: noted three");

    // Edited: the tool runs with the arguments the person gave.
    let (task, request) = asked(&setup, &url, "four").await;
    let mut edit = decision(&request, "edit");
    edit["arguments"] = json!({ "job": "four, edited" });
    let done = setup.answer(&url, &task, edit).await;
    assert_eq!(
        done["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    assert_eq!(status_text(&done["task"]), "final: noted four, edited");
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_binary_on_redis_finishes_a_turn_the_first_asked_about() {
    let redis = looopy_testkit::test_redis().unwrap();
    let prefix = format!("approval-{}", uuid::Uuid::new_v4().simple());
    let store = format!(
        "[store]\nbackend = \"redis\"\nurl = \"{}\"\nkey_prefix = \"{prefix}\"\n",
        redis.url()
    );
    let Some(setup) = Setup::new(&store).await else {
        return;
    };
    let (mut first, url) = serve_running(&setup.config, &[]);
    let (task, request) = asked(&setup, &url, "restart").await;
    // The first process dies (SIGKILL): nothing of the turn is in its memory.
    first.kill().unwrap();
    first.wait();

    let (second, url) = serve_running(&setup.config, &[]);
    let done = setup
        .answer(&url, &task, decision(&request, "approve"))
        .await;
    let done = &done["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(status_text(done), "final: noted restart");
    let runs: Vec<String> = setup
        .journal()
        .into_iter()
        .filter(|l| l.starts_with("quick"))
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    second.stop();
}

fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from(format!("/usr/bin/{program}")))
}

/// The chat page in headless Chromium (`tests/fixtures/web_approval.cjs`):
/// the question with Approve / Deny buttons; a click on Approve sends the
/// typed data part and the turn completes with the tool's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_page_approves_a_tool_call_with_a_click() {
    let Some(chromium) = require(
        "LOOOPY_CHROMIUM",
        PathBuf::from("/usr/bin/chromium"),
        "Chromium",
    ) else {
        return;
    };
    let Some(playwright) = require(
        "LOOOPY_PLAYWRIGHT_CORE",
        repo_root().join(".tools/node/node_modules/playwright-core"),
        "npm playwright-core",
    ) else {
        return;
    };
    let Some(node) = require("LOOOPY_NODE", which("node"), "Node.js") else {
        return;
    };
    let Some(setup) = Setup::new("").await else {
        return;
    };
    let (server, url) = serve_running(&setup.config, &[]);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/web_approval.cjs");
    let run = tokio::process::Command::new(node)
        .arg(script)
        .env("PLAYWRIGHT_CORE", &playwright)
        .env("CHROMIUM", &chromium)
        .env("URL", &url)
        .env("TOKEN", "py-token")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the browser script ran past 3 minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    assert!(out.status.success(), "the browser script failed: {stderr}");
    assert!(stdout.contains("ALL OK"), "{stdout}");
    let runs = setup
        .journal()
        .iter()
        .filter(|l| l.starts_with("quick"))
        .count();
    assert_eq!(runs, 1, "the tool ran once, after the click");
}

/// `looopy chat` on a pseudo-terminal: the turn's question, a y/n prompt,
/// `y` sends the approval and the answer with the tool's result follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn looopy_chat_asks_y_or_n_and_sends_the_approval() {
    use std::io::Write;

    let Some(setup) = Setup::new("").await else {
        return;
    };
    let (server, url) = serve_running(&setup.config, &[]);
    let screen = tokio::task::spawn_blocking(move || {
        let (mut child, mut master, screen) = support::chat_on_pty(&url, Some("py-token"));
        screen.wait_for("> ");
        master.write_all(b"tty\r").unwrap();
        screen.wait_for("approve quick_note? [y/n] ");
        // Anything but y or n asks again.
        master.write_all(b"perhaps\r").unwrap();
        screen.wait_for("(answer y or n)");
        master.write_all(b"y\r").unwrap();
        screen.wait_for("final: noted tty");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            master.write_all(b"\x03").unwrap();
            std::thread::sleep(Duration::from_millis(100));
            if child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "Ctrl-C did not end the session"
            );
        }
        screen.text()
    })
    .await
    .unwrap();
    assert!(screen.contains("Allow quick_note"), "{screen}");
    let runs = setup
        .journal()
        .iter()
        .filter(|l| l.starts_with("quick"))
        .count();
    assert_eq!(runs, 1, "{screen}");
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
}
