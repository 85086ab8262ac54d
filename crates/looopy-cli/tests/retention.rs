//! `looopy serve` on the memory store with a small cap (`[store]
//! max_entries`): more turns in flight than the cap keeps must each still
//! stream to their end (the cap drops ended tasks, never running or
//! followed ones), and the server stays up and answers after them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use looopy_a2a::{A2aClient, SendRequest, StreamEvent};
use looopy_core::TaskState;
use looopy_testkit::FixtureReply;
use serde_json::Value;
use support::{Running, config_with_model};

/// Turns in flight at once: four times the cap.
const CLIENTS: usize = 16;
const CAP: usize = 4;

/// Model requests answered (the fixture's responder is a plain `fn`).
static MODEL_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Answers every request after a while, so that all the turns overlap.
fn slow_answer(_: &Value) -> FixtureReply {
    MODEL_CALLS.fetch_add(1, Ordering::SeqCst);
    FixtureReply::Text("kept".into()).after(Duration::from_millis(300))
}

/// Streams one message and returns the final state the stream reported.
async fn one_turn(client: A2aClient, n: usize) -> TaskState {
    let mut stream = client
        .stream(&SendRequest::text(format!("turn {n}")))
        .await
        .expect("the stream starts");
    while let Some(item) = stream.next().await {
        let item = item.unwrap_or_else(|e| panic!("turn {n}: {e}"));
        if item.event.is_final() {
            return match &item.event {
                StreamEvent::Update(update) => update.state().expect("a final status update"),
                StreamEvent::Task(task) => task.status.state,
                other => panic!("turn {n}: unexpected final item {other:?}"),
            };
        }
    }
    panic!("turn {n}: the stream ended before its final event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_beyond_the_memory_cap_each_stream_to_their_end() {
    let llm = support::model_answering(slow_answer).await;
    let (_dir, config) = config_with_model(
        &llm,
        "m",
        &format!("[store]\nbackend = \"memory\"\nmax_entries = {CAP}\n"),
    );
    let (child, url) = support::serve(&config, &[]);
    let server = Running::new(child);
    let client = A2aClient::new(url.clone());
    client.discover().await.unwrap();

    for round in 0..2 {
        let turns: Vec<_> = (0..CLIENTS)
            .map(|n| tokio::spawn(one_turn(client.clone(), round * CLIENTS + n)))
            .collect();
        for (n, turn) in turns.into_iter().enumerate() {
            let state = tokio::time::timeout(Duration::from_secs(60), turn)
                .await
                .unwrap_or_else(|_| panic!("round {round}, turn {n} never ended"))
                .unwrap();
            assert_eq!(state, TaskState::Completed, "round {round}, turn {n}");
        }
    }
    assert_eq!(
        MODEL_CALLS.load(Ordering::SeqCst),
        2 * CLIENTS,
        "one model call per turn"
    );
    assert!(server.stop().success());
}
