//! `looopy serve` keeps its conversations in SQLite by default: with no
//! `[store]` table it writes `.looopy/looopy.db` in its working directory,
//! and a restarted server shows every earlier conversation (GetTask with
//! its history, ListTasks) and continues it. `--store memory` keeps the
//! old behaviour: nothing outlives the process, no file is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use looopy_a2a::{A2aClient, SendRequest, SendResponse, TaskSnapshot};
use looopy_core::TaskState;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use support::{config_with_model, serve, serve_with_args, stop};

async fn ask(url: &str, text: &str, context: Option<&str>) -> TaskSnapshot {
    let mut request = SendRequest::text(text);
    if let Some(context) = context {
        request = request.in_context(context);
    }
    match A2aClient::new(url).send(&request).await.unwrap() {
        SendResponse::Task(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn texts(task: &TaskSnapshot) -> Vec<String> {
    task.history.iter().map(|m| m.text()).collect()
}

async fn stopped(server: std::process::Child) {
    let status = tokio::task::spawn_blocking(move || stop(server))
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_shows_and_continues_every_conversation() {
    let llm = OpenAiFixture::start().await.unwrap();
    for answer in ["first answer", "second answer", "third answer"] {
        llm.push(FixtureReply::Text(answer.into()));
    }
    let (dir, config) = config_with_model(&llm, "m", "");
    let database = dir.path().join(".looopy/looopy.db");

    let (server, url) = serve(&config, &[]);
    let first = ask(&url, "first question", None).await;
    assert_eq!(first.status.state, TaskState::Completed);
    let context = first.context_id.clone();
    let second = ask(&url, "second question", Some(&context)).await;
    assert_eq!(second.status.state, TaskState::Completed);
    stopped(server).await;
    assert!(database.exists(), "the default store is a file in .looopy/");

    // A new process on the same file.
    let (server, url) = serve(&config, &[]);
    let client = A2aClient::new(&url);
    let again = client.get_task(&first.id, None).await.unwrap();
    assert_eq!(again.status.state, TaskState::Completed);
    assert_eq!(again.context_id, context);
    let history = texts(&again);
    assert!(history.iter().any(|t| t == "first question"), "{history:?}");
    assert!(
        history.iter().any(|t| t.contains("first answer")),
        "{history:?}"
    );
    let listed = client.list_tasks(Some(&context), None, None).await.unwrap();
    let mut ids: Vec<&str> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = vec![first.id.as_str(), second.id.as_str()];
    expected.sort_unstable();
    assert_eq!(
        ids, expected,
        "ListTasks shows both turns after the restart"
    );

    // The conversation goes on where it was: the model sees the earlier turns.
    let third = ask(&url, "third question", Some(&context)).await;
    assert_eq!(third.status.state, TaskState::Completed);
    let requests = llm.requests();
    let sent = requests.last().unwrap().body["messages"].to_string();
    for earlier in [
        "first question",
        "first answer",
        "second question",
        "second answer",
    ] {
        assert!(sent.contains(earlier), "{earlier} missing from {sent}");
    }
    stopped(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_memory_keeps_nothing_past_the_process() {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Text("an answer".into()));
    let (dir, config) = config_with_model(&llm, "m", "");

    let (server, url) = serve_with_args(&config, &["--store", "memory"], &[]);
    let task = ask(&url, "a question", None).await;
    assert_eq!(task.status.state, TaskState::Completed);
    stopped(server).await;
    assert!(
        !dir.path().join(".looopy").exists(),
        "the memory store writes no file"
    );

    let (server, url) = serve_with_args(&config, &["--store", "memory"], &[]);
    let gone = A2aClient::new(&url).get_task(&task.id, None).await;
    assert!(
        gone.is_err(),
        "a memory store forgets with its process: {gone:?}"
    );
    stopped(server).await;
}
