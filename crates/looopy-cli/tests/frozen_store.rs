//! A blocking `SendMessage` answers with a turn that ended, or with a
//! JSON-RPC error that says the store could not be reached, never with a
//! task still `submitted` or `working`: the real `looopy serve` on Redis,
//! many blocking turns at once, and the Redis server frozen (SIGSTOP) for
//! longer than its response timeout in the middle of them. Once Redis
//! answers again, GetTask shows every task's true end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use looopy_a2a::{A2aClient, A2aClientError, SendRequest, SendResponse};
use looopy_core::TaskState;
use looopy_testkit::{FixtureReply, RedisServer};
use serde_json::Value;

/// Blocking turns in flight.
const TURNS: usize = 100;
/// How long Redis is frozen each time: longer than the stores' response
/// timeout.
const FREEZE: Duration = Duration::from_millis(700);
/// How many times it is frozen while the turns run: each freeze catches
/// turns at other points of their work.
const FREEZES: usize = 4;

/// Each answer takes a while, so that turns are at every point of their
/// work (loading the history, waiting for the model, saving the answer,
/// recording their end) when Redis stops.
fn model(_body: &Value) -> FixtureReply {
    FixtureReply::Text("the answer".into()).after(Duration::from_millis(200))
}

fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

/// The task id an error names (`ErrorInfo.metadata.taskId`), when it does.
fn task_of(error: &looopy_a2a::RpcError) -> Option<String> {
    let info = error.data.as_ref()?.get(0)?;
    Some(info["metadata"]["taskId"].as_str()?.to_owned())
}

/// The task's state once it ended its turn (GetTask, asked again until
/// then: at most a few seconds after Redis answers again).
async fn settled(client: &A2aClient, task_id: &str) -> TaskState {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(task) = client.get_task(task_id, None).await
            && task.status.state.ends_turn()
        {
            return task.status.state;
        }
        assert!(
            Instant::now() < deadline,
            "task {task_id} never showed the end of its turn"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_answers_end_the_turn_while_redis_is_frozen() {
    let redis = RedisServer::start().expect("redis-server (scripts/provision.sh redis)");
    let pid = redis.pid().unwrap();
    let llm = support::model_answering(model).await;
    let store = format!(
        "[store]\nbackend = \"redis\"\nurl = \"{}\"\nkey_prefix = \"frozen\"\nresponse_timeout_ms = 500\nconnect_timeout_ms = 500\n",
        redis.url()
    );
    let (_dir, config) = support::config_with_model(&llm, "m", &store);
    let (server, url) = support::serve_running(&config, &[]);
    let client = A2aClient::new(&url);

    // A turn starts every 30 ms for three seconds; meanwhile Redis stops
    // again and again, each time for longer than a reply may take, so
    // that the freezes catch turns at every point of their work.
    let sends: Vec<_> = (0..TURNS)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(30 * i as u64)).await;
                client.send(&SendRequest::text(format!("job {i}"))).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..FREEZES {
        signal(pid, "-STOP");
        tokio::time::sleep(FREEZE).await;
        signal(pid, "-CONT");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let mut answered = Vec::new();
    let mut refused = Vec::new();
    for send in sends {
        match send.await.unwrap() {
            Ok(SendResponse::Task(task)) => {
                assert!(
                    task.status.state.ends_turn(),
                    "a blocking answer did not end the turn: {:?} ({:?})",
                    task.status.state,
                    task.status.message.as_ref().map(|m| m.text())
                );
                answered.push((task.id, task.status.state));
            }
            Err(A2aClientError::Rpc(error)) => {
                let said = error.message.to_lowercase();
                assert!(
                    said.contains("store") || said.contains("event log"),
                    "the error does not say that the store failed: {error}"
                );
                refused.push(error);
            }
            other => panic!("neither a task nor a JSON-RPC error: {other:?}"),
        }
    }
    let hit = refused.len()
        + answered
            .iter()
            .filter(|(_, s)| *s != TaskState::Completed)
            .count();
    assert!(
        hit > 0,
        "the freeze reached no turn: the test shows nothing"
    );

    // What the store says afterwards is what the blocking answer said.
    for (task_id, state) in &answered {
        assert_eq!(settled(&client, task_id).await, *state, "task {task_id}");
    }
    // A turn whose end could not be recorded in time has it recorded later.
    for error in &refused {
        if let Some(task_id) = task_of(error) {
            settled(&client, &task_id).await;
        }
    }
    server.stop();
}
