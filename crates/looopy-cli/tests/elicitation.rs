//! An MCP server's question (`elicitation/create`) as an A2A
//! `input-required` turn, through the real `looopy serve` binary and the
//! official Python A2A SDK: the `order` tool of `durable_tools.py` asks how
//! many; the task waits with the question and its schema; an answer that
//! does not fit, does not read as one or names another call is refused
//! with the error and the question stays; a fitting one reaches the tool, which goes on where it paused.
//! On Redis, a second binary finishes a turn whose question the first one
//! asked: the call runs again and the answer meets the same question.
//! With `elicitation = "off"` the server is refused and the tool says so.
//! `looopy chat` asks for the fields at its prompt, and the chat page
//! (headless Chromium) shows a form built from the schema.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use crate::approval::{Setup, status_text, waiting_on};
use crate::support::{self, serve_running};
use looopy_testkit::FixtureReply;
use looopy_testkit::external::browser;
use looopy_testkit::openai_fixture::openai;

/// The model: orders the user's item; once the call's result is in,
/// answers `final: <result>`.
fn model(body: &Value) -> FixtureReply {
    let (item, results) = support::last_user_turn(body);
    if results.is_empty() {
        let args = json!({ "item": item }).to_string();
        return FixtureReply::json(openai::tool_calls_completion(&[(
            &format!("call-{item}"),
            "order",
            &args,
        )]));
    }
    FixtureReply::Text(format!("final: {}", results.join(" | ")))
}

/// The question of an `input-required` task's status message.
fn question(task: &Value) -> Value {
    waiting_on(task, "elicitations")
}

/// Orders `item`: the task waits with the tool's question.
async fn asked(setup: &Setup, url: &str, item: &str) -> (Value, Value) {
    let out = setup.ask(url, item).await;
    let task = out["task"].clone();
    let asked = question(&task);
    assert_eq!(asked["toolCallId"], format!("call-{item}"));
    assert_eq!(asked["tool"], "order");
    assert_eq!(asked["server"], "durable");
    assert_eq!(asked["message"], format!("How many {item}?"));
    let schema = &asked["requestedSchema"];
    assert_eq!(
        schema["properties"]["quantity"]["type"], "integer",
        "{schema}"
    );
    assert!(
        status_text(&task).contains(&format!("order asks: How many {item}?")),
        "{task}"
    );
    (task, asked)
}

fn answer(asked: &Value, action: &str, content: Option<Value>) -> Value {
    let mut answer = json!({
        "toolCallId": asked["toolCallId"],
        "requestId": asked["requestId"],
        "action": action,
    });
    if let Some(content) = content {
        answer["content"] = content;
    }
    json!({ "elicitation": answer })
}

fn count(setup: &Setup, prefix: &str) -> usize {
    setup
        .journal()
        .iter()
        .filter(|l| l.starts_with(prefix))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_question_becomes_input_required_and_the_answer_reaches_it() {
    let Some(setup) = Setup::with("", "", "", model).await else {
        return;
    };
    let (server, url) = serve_running(&setup.config, &[]);
    let (task, asked) = asked(&setup, &url, "apples").await;

    // Content that does not fit the schema is not sent: the question stays,
    // with the validation error.
    let bad = setup
        .reply(
            &url,
            &task,
            answer(&asked, "accept", Some(json!({"quantity": "lots"}))),
        )
        .await;
    let again = question(&bad["task"]);
    assert_eq!(again["requestId"], asked["requestId"]);
    let error = again["error"].as_str().unwrap_or_default();
    assert!(error.contains("quantity: must be an integer"), "{again}");
    assert!(status_text(&bad["task"]).contains("did not fit"), "{bad}");

    // An answer that does not read as one (`accept` without its content)
    // or that names a call that asked nothing is not taken either: the
    // task asks again, with the error, and the paused call still waits.
    let unreadable = setup
        .reply(&url, &task, answer(&asked, "accept", None))
        .await;
    let unreadable = &unreadable["task"];
    assert_eq!(
        unreadable["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{unreadable}"
    );
    let again = question(unreadable);
    assert_eq!(again["requestId"], asked["requestId"]);
    let error = again["error"].as_str().unwrap_or_default();
    assert!(error.contains("`accept` needs `content`"), "{again}");
    assert!(
        status_text(unreadable).contains("How many apples?"),
        "{unreadable}"
    );
    let mut stray = asked.clone();
    stray["toolCallId"] = json!("call-none");
    let stray = setup
        .reply(
            &url,
            &task,
            answer(&stray, "accept", Some(json!({"quantity": 1}))),
        )
        .await;
    let again = question(&stray["task"]);
    assert_eq!(again["requestId"], asked["requestId"], "{stray}");
    let error = again["error"].as_str().unwrap_or_default();
    assert!(error.contains("call-none"), "{again}");

    // A fitting answer: the paused call goes on, and the turn completes.
    let done = setup
        .reply(
            &url,
            &task,
            answer(&asked, "accept", Some(json!({"quantity": 3}))),
        )
        .await;
    let done = &done["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(status_text(done), "final: ordered 3 apples");
    assert_eq!(count(&setup, "asked"), 1, "one call: {:?}", setup.journal());
    assert_eq!(count(&setup, "ordered 3 apples"), 1);

    // Declined: the tool hears it and goes on without.
    let (task, asked) = self::asked(&setup, &url, "pears").await;
    let done = setup
        .reply(&url, &task, answer(&asked, "decline", None))
        .await;
    let done = &done["task"];
    assert_eq!(
        status_text(done),
        "final: decline: no pears ordered",
        "{done}"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_binary_on_redis_answers_a_question_the_first_one_asked() {
    let redis = looopy_testkit::test_redis().unwrap();
    let prefix = format!("elicit-{}", uuid::Uuid::new_v4().simple());
    let store = format!(
        "[store]\nbackend = \"redis\"\nurl = \"{}\"\nkey_prefix = \"{prefix}\"\n",
        redis.url()
    );
    let Some(setup) = Setup::with(&store, "", "", model).await else {
        return;
    };
    let (mut first, url) = serve_running(&setup.config, &[]);
    let (task, asked) = asked(&setup, &url, "plums").await;
    // The first process dies (SIGKILL), and its paused call with it.
    first.kill().unwrap();
    first.wait();

    let (second, url) = serve_running(&setup.config, &[]);
    let done = setup
        .reply(
            &url,
            &task,
            answer(&asked, "accept", Some(json!({"quantity": 2}))),
        )
        .await;
    let done = &done["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(status_text(done), "final: ordered 2 plums");
    // The call ran again, asked the same question, and got the answer.
    assert_eq!(count(&setup, "asked"), 2, "{:?}", setup.journal());
    assert_eq!(count(&setup, "ordered 2 plums"), 1, "{:?}", setup.journal());
    second.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_elicitation_off_the_server_is_refused_and_the_turn_goes_on() {
    let Some(setup) = Setup::with("", "", "elicitation = \"off\"", model).await else {
        return;
    };
    let (server, url) = serve_running(&setup.config, &[]);
    let out = setup.ask(&url, "figs").await;
    let task = &out["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let text = status_text(task);
    assert!(text.starts_with("final: Error"), "{text}");
    assert!(text.contains("elicitation is off"), "{text}");
    assert_eq!(count(&setup, "ordered"), 0);
    server.stop();
}

/// `looopy chat` on a pseudo-terminal: the tool's question, a prompt for
/// its one field (a word where a number goes is asked again), and the
/// answer with the tool's result follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn looopy_chat_asks_for_each_field_and_sends_the_answer() {
    use std::io::Write;

    let Some(setup) = Setup::with("", "", "", model).await else {
        return;
    };
    let (server, url) = serve_running(&setup.config, &[]);
    let screen = tokio::task::spawn_blocking(move || {
        let (mut child, mut master, screen) = support::chat_on_pty(&url, Some("py-token"));
        screen.wait_for("> ");
        master.write_all(b"lemons\r").unwrap();
        screen.wait_for("(integer, required): ");
        master.write_all(b"lots\r").unwrap();
        screen.wait_for("(a whole number)");
        master.write_all(b"4\r").unwrap();
        screen.wait_for("final: ordered 4 lemons");
        support::ctrl_c_until_it_leaves(&mut child, &mut master);
        screen.text()
    })
    .await
    .unwrap();
    assert!(screen.contains("order asks: How many lemons?"), "{screen}");
    assert!(screen.contains("Quantity [quantity]"), "{screen}");
    assert_eq!(count(&setup, "ordered 4 lemons"), 1, "{screen}");
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
}

/// The chat page in headless Chromium (`tests/fixtures/web_elicitation.cjs`):
/// the question as a form built from the schema; sending it answers with
/// the typed data part and the turn completes with the tool's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_page_shows_the_question_as_a_form() {
    let Some(browser) = browser() else {
        return;
    };
    let Some(setup) = Setup::with("", "", "", model).await else {
        return;
    };
    let (server, url) = serve_running(&setup.config, &[]);
    support::run_page_script(
        &browser,
        "web_elicitation.cjs",
        server,
        &url,
        "py-token",
        &[],
    )
    .await;
    assert_eq!(count(&setup, "ordered 2 melons"), 1);
}
