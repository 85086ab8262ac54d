//! Human approval of tool calls through the real `looopy serve` binary,
//! driven by the official Python A2A SDK (a2a-sdk 1.x): `[agent]
//! approve_tools` in `looopy.toml` makes a call wait; the task ends
//! `input-required` with the question; a data part approves, denies or edits
//! it and the turn completes, with the MCP tool run (or not) as decided. On
//! Redis, a second binary finishes a turn the first one asked about. The
//! chat page (headless Chromium) and `looopy chat` (a pseudo-terminal) ask
//! and answer too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::PathBuf;
use std::process::Command;

use looopy_testkit::external::{browser, repo_root};
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::{Value, json};
use support::{Journal, serve_running, write_config};

/// The model: asks for `quick_note` on the user's job; once the call's
/// result is in, answers `final: <result>`.
pub(crate) fn model(body: &Value) -> FixtureReply {
    let (job, results) = support::last_user_turn(body);
    if results.is_empty() {
        let args = json!({ "job": job }).to_string();
        return FixtureReply::json(openai::tool_calls_completion(&[(
            &format!("call-{job}"),
            "quick_note",
            &args,
        )]));
    }
    FixtureReply::Text(format!("final: {}", results.join(" | ")))
}

/// A `looopy serve` configuration with the MCP tools of
/// `durable_tools.py`, the model of the test, and the Python A2A client.
pub(crate) struct Setup {
    _dir: tempfile::TempDir,
    journal: Journal,
    pub(crate) config: PathBuf,
    python: PathBuf,
    _llm: OpenAiFixture,
}

impl Setup {
    /// A `looopy.toml` with the MCP tools of `durable_tools.py`, calls of
    /// `quick_note` waiting for approval, and `store` as its `[store]`.
    async fn new(store: &str) -> Option<Setup> {
        Self::with(store, r#"approve_tools = ["quick_note"]"#, "", model).await
    }

    /// A `looopy.toml` with the MCP tools of `durable_tools.py` (`mcp`:
    /// more lines of its `[[tools.mcp]]`), these lines in `[agent]`,
    /// `model` answering, and `store` as its `[store]`.
    pub(crate) async fn with(
        store: &str,
        agent: &str,
        mcp: &str,
        model: fn(&Value) -> FixtureReply,
    ) -> Option<Setup> {
        let python = support::python()?;
        let llm = support::model_answering(model).await;
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::create(dir.path());
        let tools = support::durable_tools_section(&python, &journal, "");
        let config = write_config(
            &dir,
            &format!(
                r#"
[agent]
name = "approver"
{agent}
[llm]
base_url = "{base}"
model = "m"
{tools}{mcp}
[[auth.tokens]]
principal = "python"
token = "py-token"
{store}
"#,
                base = llm.base_url(),
            ),
        );
        Some(Setup {
            _dir: dir,
            journal,
            config,
            python,
            _llm: llm,
        })
    }

    pub(crate) fn journal(&self) -> Vec<String> {
        self.journal.lines()
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
        support::json_output(&out)
    }

    pub(crate) async fn ask(&self, url: &str, job: &str) -> Value {
        self.client(vec![
            "ask".into(),
            url.into(),
            "py-token".into(),
            job.into(),
        ])
        .await
    }

    async fn answer(&self, url: &str, task: &Value, approval: Value) -> Value {
        self.reply(url, task, json!({ "approval": approval })).await
    }

    /// Sends one data part `data` on `task`.
    pub(crate) async fn reply(&self, url: &str, task: &Value, data: Value) -> Value {
        self.client(vec![
            "reply".into(),
            url.into(),
            "py-token".into(),
            task["id"].as_str().unwrap().into(),
            task["contextId"].as_str().unwrap().into(),
            data.to_string(),
        ])
        .await
    }

    /// Answers the question of `task` with `approval`; the turn completes:
    /// the text of its final status.
    async fn completed(&self, url: &str, task: &Value, approval: Value) -> String {
        let done = self.answer(url, task, approval).await;
        let done = &done["task"];
        assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
        status_text(done)
    }

    /// How many times `quick_note` ran.
    fn quick_runs(&self) -> usize {
        self.journal()
            .iter()
            .filter(|l| l.starts_with("quick"))
            .count()
    }
}

/// The first entry of the list `key` (`approvalRequests`, `elicitations`)
/// in the data part of an `input-required` task's status message.
pub(crate) fn waiting_on(task: &Value, key: &str) -> Value {
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    task["status"]["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| p["data"][key].get(0).cloned())
        .unwrap_or_else(|| panic!("no {key} in {task}"))
}

/// The approval request of an `input-required` task's status message.
fn approval_request(task: &Value) -> Value {
    waiting_on(task, "approvalRequests")
}

/// The text of a task's status message.
pub(crate) fn status_text(task: &Value) -> String {
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
    let approve = decision(&request, "approve");
    let done = setup.completed(&url, &task, approve).await;
    assert_eq!(done, "final: noted one");
    assert_eq!(setup.quick_runs(), 1);

    // Denied: the tool does not run; the model reads the denial.
    let (task, request) = asked(&setup, &url, "two").await;
    let mut deny = decision(&request, "deny");
    deny["reason"] = json!("not today");
    let done = setup.completed(&url, &task, deny).await;
    assert_eq!(done, "final: Error: Tool call denied: not today");
    assert_eq!(setup.quick_runs(), 1);

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
    let approve = decision(&request, "approve");
    let done = setup.completed(&url, &task, approve).await;
    assert_eq!(done, "final: noted three");

    // Edited: the tool runs with the arguments the person gave.
    let (task, request) = asked(&setup, &url, "four").await;
    let mut edit = decision(&request, "edit");
    edit["arguments"] = json!({ "job": "four, edited" });
    let done = setup.completed(&url, &task, edit).await;
    assert_eq!(done, "final: noted four, edited");
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
    let approve = decision(&request, "approve");
    let done = setup.completed(&url, &task, approve).await;
    assert_eq!(done, "final: noted restart");
    assert_eq!(setup.quick_runs(), 1, "{:?}", setup.journal());
    second.stop();
}

/// The chat page in headless Chromium (`tests/fixtures/web_approval.cjs`):
/// the question with Approve / Deny buttons; a click on Approve sends the
/// typed data part and the turn completes with the tool's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_page_approves_a_tool_call_with_a_click() {
    let Some(browser) = browser() else {
        return;
    };
    let Some(setup) = Setup::new("").await else {
        return;
    };
    let (server, url) = serve_running(&setup.config, &[]);
    support::run_page_script(&browser, "web_approval.cjs", server, &url, "py-token", &[]).await;
    assert_eq!(setup.quick_runs(), 1, "the tool ran once, after the click");
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
        support::ctrl_c_until_it_leaves(&mut child, &mut master);
        screen.text()
    })
    .await
    .unwrap();
    assert!(screen.contains("Allow quick_note"), "{screen}");
    assert_eq!(setup.quick_runs(), 1, "{screen}");
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
}
