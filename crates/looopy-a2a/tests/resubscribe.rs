//! Tasks outlive connections: drop a stream midway, resubscribe with
//! Last-Event-ID and get exactly what was missed (once the turn has ended,
//! with its streamed answer as one whole artifact); also from a second
//! server sharing the stores.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_core::TaskState;
use looopy_core::store::EventLog;
use serde_json::json;
use support::*;
use tokio::sync::Semaphore;

fn gated(gate: &Arc<Semaphore>) -> ScriptedRunner {
    ScriptedRunner::new(vec![vec![
        working(),
        chunk("one ", true, false),
        Step::Gate(gate.clone()),
        chunk("two ", false, false),
        internal(),
        chunk("three", false, true),
        finish(TaskState::Completed, "one two three"),
    ]])
}

/// The log ids of a task's public events, from the server's log.
async fn log_ids(server: &TestServer, task_id: &str) -> Vec<String> {
    server
        .events
        .read(task_id, None, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn v1_disconnect_then_resubscribe_after_the_end_gets_the_rest_with_the_answer_whole() {
    let gate = Arc::new(Semaphore::new(0));
    let server = start(gated(&gate)).await;
    let mut first = stream_v1(&server.url, v1_message("count")).await;
    let task = first.next().await.unwrap();
    let task_id = task.data["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let working = first.next().await.unwrap();
    let one = first.next().await.unwrap();
    assert_eq!(
        one.data["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "one "
    );
    let last_seen = one.id.clone().unwrap();
    drop(first); // the client goes away midway

    // The task goes on without a reader, and once it ended its three
    // chunks are kept as one whole artifact.
    gate.add_permits(1);
    wait_for_state(&server.url, &task_id, "TASK_STATE_COMPLETED").await;
    eventually(async || log_ids(&server, &task_id).await.len() == 4).await;

    let events = resubscribe_v1(&server.url, &task_id, &last_seen)
        .await
        .rest()
        .await;
    // 1.0 starts with the task as it is (no id), then the missed events.
    assert_eq!(events[0].data["result"]["task"]["id"], task_id.as_str());
    assert_eq!(
        events[0].data["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let missed = &events[1..];
    let texts = artifact_texts_v1(missed);
    assert_eq!(texts, ["one two three"]);
    let whole = &missed[0].data["result"]["artifactUpdate"];
    assert_ne!(whole["append"], true, "it replaces the client's copy");
    assert_eq!(whole["lastChunk"], true);
    assert_eq!(*last_state_v1(missed), "TASK_STATE_COMPLETED");
    assert_eq!(missed.len(), 2);
    assert_eq!(built_answer_v1(missed), "one two three");
    // Exactly the log's events after the last one seen.
    let ids = log_ids(&server, &task_id).await;
    let after: Vec<_> = server
        .events
        .read(&task_id, Some(&last_seen), 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    let got: Vec<_> = missed.iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(got, after);
    // Nothing else was lost (and the stream did not ask for the
    // tool-progress extension: no update of it was logged).
    assert_eq!(ids.len(), 4, "task, working, the answer, completed");
    let _ = working;
}

#[tokio::test(flavor = "multi_thread")]
async fn v03_resubscribe_while_running_then_follow_to_the_end() {
    let gate = Arc::new(Semaphore::new(0));
    let server = start(gated(&gate)).await;
    let mut first = sse(
        &server.url,
        None,
        &[],
        "message/stream",
        v03_message("count"),
    )
    .await;
    let task = first.next().await.unwrap();
    let task_id = task.data["result"]["id"].as_str().unwrap().to_owned();
    let second = first.next().await.unwrap();
    assert_eq!(second.data["result"]["kind"], "status-update");
    let last_seen = second.id.unwrap();
    drop(first);

    // Resubscribe while the turn waits at the gate; then let it finish.
    let mut again = sse(
        &server.url,
        None,
        &[("last-event-id", &last_seen)],
        "tasks/resubscribe",
        json!({"id": task_id}),
    )
    .await;
    let one = again.next().await.unwrap();
    assert_eq!(one.data["result"]["kind"], "artifact-update");
    assert_eq!(one.data["result"]["artifact"]["parts"][0]["text"], "one ");
    gate.add_permits(1);
    let rest = again.rest().await;
    let kinds: Vec<_> = rest
        .iter()
        .map(|e| e.data["result"]["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        ["artifact-update", "artifact-update", "status-update"]
    );
    assert_eq!(rest[2].data["result"]["final"], true);

    // Without Last-Event-ID a 0.3 resubscription replays the turn from its
    // start; on a finished task it is refused.
    let r = sse(
        &server.url,
        None,
        &[],
        "tasks/resubscribe",
        json!({"id": task_id}),
    )
    .await
    .rest()
    .await;
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].data["error"]["code"], -32004);
}

#[tokio::test(flavor = "multi_thread")]
async fn subscribe_without_last_event_id_starts_with_the_task_and_replays_the_turn() {
    let gate = Arc::new(Semaphore::new(0));
    let server = start(gated(&gate)).await;
    let task_id = send_v1(&server.url, json!({"returnImmediately": true})).await;
    let mut s = subscribe_v1(&server.url, &task_id).await;
    let snapshot = s.next().await.unwrap();
    assert!(snapshot.id.is_none());
    assert_eq!(snapshot.data["result"]["task"]["id"], task_id.as_str());
    let replayed = s.next().await.unwrap();
    assert_eq!(
        replayed.data["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    gate.add_permits(1);
    let rest = s.rest().await;
    assert_eq!(*last_state_v1(&rest), "TASK_STATE_COMPLETED");
    assert_eq!(rest.len(), 5, "working, one, two, three, completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_server_sharing_the_stores_serves_the_stream() {
    let gate = Arc::new(Semaphore::new(0));
    let stores = SharedStores::default();
    let a = serve(builder(gated(&gate), &stores).build(), &stores).await;
    let b = serve(builder(ScriptedRunner::hello(), &stores).build(), &stores).await;
    let mut first = stream_v1(&a.url, v1_message("count")).await;
    let task_id = first.next().await.unwrap().data["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let seen = first.next().await.unwrap().id.unwrap();
    drop(first);

    let mut on_b = resubscribe_v1(&b.url, &task_id, &seen).await;
    assert_eq!(
        on_b.next().await.unwrap().data["result"]["task"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    gate.add_permits(1);
    let rest = on_b.rest().await;
    // Chunks as they came, or (when the turn ended before B read them)
    // the whole answer: the client builds the same text.
    assert_eq!(built_answer_v1(&rest), "one two three");
    assert_eq!(*last_state_v1(&rest), "TASK_STATE_COMPLETED");
    // B answers GetTask for A's task too.
    let got = rpc_v1(&b.url, "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        got["result"]["artifacts"][0]["parts"][0]["text"],
        "one two three"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_task_reports_its_artifacts_so_far() {
    let gate = Arc::new(Semaphore::new(0));
    let server = start(gated(&gate)).await;
    let task_id = send_v1(&server.url, json!({"returnImmediately": true})).await;
    eventually(async || {
        get_task_v1(&server.url, &task_id).await["artifacts"][0]["parts"][0]["text"] == "one "
    })
    .await;
    gate.add_permits(1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_last_event_id_is_an_invalid_param() {
    let server = start(ScriptedRunner::hello()).await;
    let r = rpc_v1(&server.url, "SendMessage", v1_message("x")).await;
    let id = r["result"]["task"]["id"].as_str().unwrap();
    let events = resubscribe_v1(&server.url, id, "not-an-id")
        .await
        .rest()
        .await;
    assert_eq!(events.last().unwrap().data["error"]["code"], -32602);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_longer_than_the_streams_buffer_comes_whole_and_in_order() {
    // More events than a stream queues at once (64): the follower waits for
    // the client to take some before it reads on.
    // The replay runs while the turn waits at the gate: once it ends, its
    // chunks are kept as one artifact.
    let count = 200;
    let gate = Arc::new(Semaphore::new(0));
    let mut script = vec![working()];
    script.extend((0..count).map(|i| chunk(&format!("{i} "), i == 0, i == count - 1)));
    script.push(Step::Gate(gate.clone()));
    script.push(finish(TaskState::Completed, "counted"));
    let server = start(ScriptedRunner::new(vec![script])).await;
    let mut live = stream_v1(&server.url, v1_message("count")).await;
    let mut events = Vec::new();
    for _ in 0..2 + count {
        events.push(live.next().await.unwrap());
    }
    let task_id = events[0].task_id();
    let first_id = events[1].id.clone().unwrap();

    let mut replay = resubscribe_v1(&server.url, &task_id, &first_id).await;
    let mut replayed = Vec::new();
    for _ in 0..1 + count {
        replayed.push(replay.next().await.unwrap());
    }
    let ids = log_ids(&server, &task_id).await;
    gate.add_permits(1);
    replayed.extend(replay.rest().await);
    events.extend(live.rest().await);
    let expected: Vec<String> = (0..count).map(|i| format!("{i} ")).collect();
    assert_eq!(artifact_texts_v1(&replayed[1..]), expected);
    assert_eq!(*last_state_v1(&replayed), "TASK_STATE_COMPLETED");
    let got: Vec<_> = replayed[1..=count]
        .iter()
        .map(|e| e.id.clone().unwrap())
        .collect();
    assert_eq!(
        got,
        ids[2..],
        "every logged event after the first, in order"
    );
    // The live stream saw the same events.
    assert_eq!(artifact_texts_v1(&events), expected);
}
