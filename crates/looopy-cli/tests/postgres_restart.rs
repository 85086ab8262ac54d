//! `looopy serve` on PostgreSQL while the PostgreSQL server is stopped and
//! started again (same data directory, same port) with turns running: the
//! server stays up, every turn started after the restart completes, and the
//! turns the outage caught each reach a true final state (completed, or
//! failed with a message that says what went wrong): none is left working.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use looopy_a2a::{A2aClient, SendRequest, SendResponse, TaskSnapshot};
use looopy_core::TaskState;
use looopy_testkit::FixtureReply;
use serde_json::Value;
use support::{Running, write_config};

/// Turns under way when the server goes away, and turns sent after it is back.
const BEFORE: usize = 4;
const AFTER: usize = 4;
/// How long the model takes to answer: the outage falls inside it.
const MODEL_MS: u64 = 1500;
/// How long PostgreSQL stays down: shorter than the store's retry budget.
const OUTAGE_MS: u64 = 1500;

/// Answers each request with the job it was given, after a while.
fn slow_answer(body: &Value) -> FixtureReply {
    let (job, _) = support::last_user_turn(body);
    FixtureReply::Text(format!("did {job}")).after(Duration::from_millis(MODEL_MS))
}

/// Starts `job` without waiting for its end; its task id.
async fn start_job(url: &str, job: &str) -> String {
    match A2aClient::new(url)
        .send(&SendRequest::text(job).non_blocking())
        .await
        .unwrap_or_else(|e| panic!("{job}: {e}"))
    {
        SendResponse::Task(task) => task.id,
        other => panic!("{job}: expected a task, got {other:?}"),
    }
}

/// Polls GetTask until the task's turn ended (30 s at most).
async fn wait_end(url: &str, task_id: &str) -> TaskSnapshot {
    let client = A2aClient::new(url);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let task = client.get_task(task_id, None).await;
        if let Ok(task) = &task
            && task.status.state.ends_turn()
        {
            return task.clone();
        }
        assert!(
            Instant::now() < deadline,
            "task {task_id} did not end in 30 s: {task:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn answer(task: &TaskSnapshot) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_go_on_when_postgres_is_restarted_under_load() {
    let Some(postgres) =
        looopy_testkit::own_postgres_or_skip("turns_go_on_when_postgres_is_restarted_under_load")
    else {
        return;
    };
    let llm = support::model_answering(slow_answer).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        &dir,
        &format!(
            r#"
[llm]
base_url = "{base}"
model = "m"
[store]
backend = "postgres"
url = "{url}"
schema = "restart"
pool_size = 4
connect_timeout_ms = 500
retry_budget_ms = 8000
follow_poll_ms = 200
"#,
            base = llm.base_url(),
            url = postgres.url(),
        ),
    );
    let mut server_pg = postgres.into_server().expect("a server of the test's own");
    let (child, url) = support::serve(&config, &[]);
    let mut serve = Running::new(child);

    let mut caught = Vec::new();
    for i in 0..BEFORE {
        let job = format!("before-{i}");
        caught.push((job.clone(), start_job(&url, &job).await));
    }
    // Every turn waits for its model now: PostgreSQL goes away under them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server_pg.stop();
    // A turn sent while the database is down: the server waits for it
    // (within the retry budget) or refuses the turn; it stays up either way.
    let during = {
        let url = url.clone();
        tokio::spawn(async move {
            A2aClient::new(&url)
                .send(&SendRequest::text("during").non_blocking())
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(OUTAGE_MS)).await;
    server_pg
        .restart()
        .expect("PostgreSQL starts again on its data");
    match during.await.unwrap() {
        Ok(SendResponse::Task(task)) => caught.push(("during".to_owned(), task.id)),
        Ok(other) => panic!("during: expected a task, got {other:?}"),
        Err(e) => {
            let message = e.to_string();
            assert!(!message.is_empty(), "a refused turn says why");
        }
    }

    // Every turn sent after the restart completes.
    let mut after = Vec::new();
    for i in 0..AFTER {
        let job = format!("after-{i}");
        after.push((job.clone(), start_job(&url, &job).await));
    }
    for (job, task_id) in &after {
        let task = wait_end(&url, task_id).await;
        assert_eq!(task.status.state, TaskState::Completed, "{job}: {task:?}");
        assert_eq!(answer(&task), format!("did {job}"), "{job}");
    }
    // The turns the outage caught each ended for good: completed with their
    // answer, or failed with a message; GetTask shows that final state.
    let mut completed = 0;
    for (job, task_id) in &caught {
        let task = wait_end(&url, task_id).await;
        match task.status.state {
            TaskState::Completed => {
                assert_eq!(answer(&task), format!("did {job}"), "{job}");
                completed += 1;
            }
            TaskState::Failed => {
                let message = answer(&task);
                assert!(!message.is_empty(), "{job} failed without a message");
            }
            other => panic!("{job} ended {other:?}: {task:?}"),
        }
        let again = A2aClient::new(&url).get_task(task_id, None).await.unwrap();
        assert_eq!(
            again.status.state, task.status.state,
            "{job}: the state stays"
        );
    }
    eprintln!(
        "{completed} of {} turns caught by the outage completed",
        caught.len()
    );
    assert!(
        serve.try_wait().unwrap().is_none(),
        "looopy serve stayed up through the outage"
    );
    let status = tokio::task::spawn_blocking(move || serve.stop())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}
