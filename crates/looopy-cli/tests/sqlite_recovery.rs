//! A turn of `looopy serve` on its default SQLite store, killed with
//! SIGKILL mid-tool, is resumed by the restarted server: the completed tool
//! call comes from the checkpoint and is not run again, the interrupted one
//! is not retried.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use looopy_a2a::{A2aClient, SendRequest, SendResponse};
use looopy_core::TaskState;
use looopy_testkit::FixtureReply;
use support::serve;

/// The model of the kill test: for a new job a quick call and a slow one;
/// once their results are in, an answer naming the job and the results.
fn two_calls_then_answer(body: &serde_json::Value) -> FixtureReply {
    use looopy_testkit::openai_fixture::openai;
    let (job, results) = support::last_user_turn(body);
    if results.is_empty() {
        let args = serde_json::json!({ "job": job }).to_string();
        let (quick, slow) = (format!("q-{job}"), format!("s-{job}"));
        if body["stream"] == true {
            return FixtureReply::Sse(looopy_testkit::SseReply::new(vec![
                openai::tool_call_start_chunk(0, &quick, "quick_note"),
                openai::tool_args_chunk(0, &args),
                openai::tool_call_start_chunk(1, &slow, "slow_step"),
                openai::tool_args_chunk(1, &args),
                openai::finish_chunk("tool_calls"),
            ]));
        }
        return FixtureReply::json(openai::tool_calls_completion(&[
            (&quick, "quick_note", &args),
            (&slow, "slow_step", &args),
        ]));
    }
    let interrupted = results.iter().any(|r| r.contains("interrupted"));
    FixtureReply::Text(format!(
        "finished {job} with {} results{}",
        results.len(),
        if interrupted { ", one interrupted" } else { "" }
    ))
}

/// What [`kill_mid_tool`] leaves: the model, the server's folder (kept
/// alive), the tools' journal, the config and the killed turn's task.
struct Killed {
    llm: looopy_testkit::OpenAiFixture,
    dir: tempfile::TempDir,
    journal: support::Journal,
    config: std::path::PathBuf,
    task_id: String,
}

/// Starts `looopy serve` on its default SQLite store with `model`, sends
/// `job` and kills the server with SIGKILL once the quick call has run and
/// the slow one has started.
async fn kill_mid_tool(
    python: &std::path::Path,
    model: fn(&serde_json::Value) -> FixtureReply,
    job: &str,
) -> Killed {
    let llm = support::model_answering(model).await;
    let dir = tempfile::tempdir().unwrap();
    let journal = support::Journal::create(dir.path());
    let tools = support::durable_tools_section(python, &journal, "SLOW_SECS = \"4\"");
    let config = support::write_config(
        &dir,
        &format!(
            "[llm]\nbase_url = \"{}\"\nmodel = \"m\"\n{tools}[durability]\nlease_ttl_secs = 1.5\nscan_interval_secs = 0.3\n",
            llm.base_url()
        ),
    );
    let count = |line: &str| journal.lines().iter().filter(|l| *l == line).count();

    let (server, url) = serve(&config, &[]);
    let mut server = support::Running::new(server);
    let request = SendRequest::text(job).non_blocking();
    let task = match A2aClient::new(&url).send(&request).await.unwrap() {
        SendResponse::Task(task) => task,
        other => panic!("expected a task, got {other:?}"),
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while count(&format!("quick q-{job}")) == 0 || count(&format!("start s-{job}")) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            journal.lines()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.kill().unwrap();
    server.wait();
    Killed {
        llm,
        dir,
        journal,
        config,
        task_id: task.id,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_mid_tool_is_resumed_by_the_restarted_server() {
    let Some(python) = support::python() else {
        return;
    };
    let killed = kill_mid_tool(&python, two_calls_then_answer, "job-1").await;
    let Killed {
        llm: _llm,
        dir: _dir,
        journal,
        config,
        task_id,
    } = killed;
    let count = |line: &str| journal.lines().iter().filter(|l| *l == line).count();

    let (server, url) = serve(&config, &[]);
    let server = support::Running::new(server);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let client = A2aClient::new(&url);
    let ended = loop {
        let seen = client.get_task(&task_id, None).await.unwrap();
        if seen.status.state.ends_turn() {
            break seen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still {:?}",
            seen.status.state
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(ended.status.state, TaskState::Completed, "{ended:?}");
    let answer = ended
        .status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default();
    assert!(
        answer.contains("finished job-1 with 2 results, one interrupted"),
        "{answer}"
    );
    // The completed call came from the checkpoint; the interrupted one was
    // not run again.
    assert_eq!(count("quick q-job-1"), 1, "{:?}", journal.lines());
    assert_eq!(count("start s-job-1"), 1, "{:?}", journal.lines());
    assert!(server.stop().success());
}

/// [`two_calls_then_answer`], with the answer after the tool results
/// coming [`SLOW_ANSWER`] late: the resumed turn is still running when the
/// test stops the server.
fn two_calls_then_slow_answer(body: &serde_json::Value) -> FixtureReply {
    let (_, results) = support::last_user_turn(body);
    let reply = two_calls_then_answer(body);
    if results.is_empty() {
        reply
    } else {
        reply.after(SLOW_ANSWER)
    }
}

/// How late the resumed turn's answer comes: well within the server's
/// shutdown grace and the test's wait for the exit.
const SLOW_ANSWER: std::time::Duration = std::time::Duration::from_secs(4);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stops_on_sigterm_while_it_runs_a_resumed_turn() {
    let Some(python) = support::python() else {
        return;
    };
    let killed = kill_mid_tool(&python, two_calls_then_slow_answer, "job-2").await;
    let Killed {
        llm,
        dir: _dir,
        journal,
        config,
        task_id,
    } = killed;
    let count = |line: &str| journal.lines().iter().filter(|l| *l == line).count();

    // The restarted server resumes the turn; once the resumed turn asks the
    // model (whose answer is slow), SIGTERM.
    let asked = llm.served();
    let (server, _) = serve(&config, &[]);
    let server = support::Running::new(server);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while llm.served() == asked {
        assert!(
            std::time::Instant::now() < deadline,
            "the resumed turn never asked the model"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let stopping = std::time::Instant::now();
    assert!(server.stop().success(), "looopy serve exits cleanly");
    assert!(
        stopping.elapsed() >= SLOW_ANSWER / 2,
        "the server gave the running turn its grace"
    );

    // The grace let the resumed turn end and save: a third server shows it
    // completed.
    let (server, url) = serve(&config, &[]);
    let server = support::Running::new(server);
    let ended = A2aClient::new(&url).get_task(&task_id, None).await.unwrap();
    assert_eq!(ended.status.state, TaskState::Completed, "{ended:?}");
    assert_eq!(count("start s-job-2"), 1, "{:?}", journal.lines());
    assert!(server.stop().success());
}
