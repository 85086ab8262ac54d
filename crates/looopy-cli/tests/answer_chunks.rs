//! `looopy serve` on Redis keeps a finished turn's streamed answer as one
//! event: the stream that asked reads the chunks as they came; once the
//! turn has ended, the task's event stream in Redis holds the answer once,
//! and a client that reconnects after the end gets it whole.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use futures::StreamExt;
use looopy_a2a::{A2aClient, SendRequest, StreamEvent, StreamItem};
use looopy_core::EventPayload;
use looopy_core::store::StoredEvent;
use looopy_stores::{RedisConfig, StoreConfig};
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, SseReply};
use serde_json::Value;
use support::{config_with_model, serve_running};

const CHUNKS: [&str; 5] = ["The ", "answer ", "comes ", "in ", "pieces."];

/// The model streams its answer in five pieces.
fn model(body: &Value) -> FixtureReply {
    assert_eq!(body["stream"], true, "looopy serve streams the model");
    let mut chunks: Vec<Value> = CHUNKS.iter().map(|c| openai::text_chunk(c)).collect();
    chunks.push(openai::finish_chunk("stop"));
    FixtureReply::Sse(SseReply::new(chunks))
}

/// The artifact updates among these items: (text, append).
fn updates(items: &[StreamItem]) -> Vec<(String, bool)> {
    items
        .iter()
        .filter_map(|item| match &item.event {
            StreamEvent::Update(event) => match &*event.payload {
                EventPayload::ArtifactUpdate {
                    artifact, append, ..
                } => Some((
                    artifact.parts.iter().filter_map(|p| p.as_text()).collect(),
                    *append,
                )),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The artifact updates the task's log holds.
fn logged_updates(events: &[StoredEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(&*e.event.payload, EventPayload::ArtifactUpdate { .. }))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_answer_is_one_event_in_redis_and_comes_whole_after_a_reconnect() {
    let redis = looopy_testkit::test_redis().unwrap();
    let prefix = format!("chunks-{}", uuid::Uuid::new_v4().simple());
    let llm = support::model_answering(model).await;
    let (_dir, config) = config_with_model(
        &llm,
        "m",
        &format!(
            "[store]\nbackend = \"redis\"\nurl = \"{}\"\nkey_prefix = \"{prefix}\"\n",
            redis.url()
        ),
    );
    let (server, url) = serve_running(&config, &[]);
    let client = A2aClient::new(&url);

    let items: Vec<StreamItem> = client
        .stream(&SendRequest::text("tell me"))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    let StreamEvent::Task(task) = &items[0].event else {
        panic!("the stream starts with the task: {:?}", items[0]);
    };
    let task_id = task.id.clone();
    assert!(items.last().unwrap().event.is_final());
    let live = updates(&items);
    let expected: Vec<(String, bool)> = CHUNKS
        .iter()
        .enumerate()
        .map(|(i, c)| ((*c).to_owned(), i > 0))
        .collect();
    assert_eq!(live, expected, "the stream that asked reads every chunk");

    // The same log the server writes, read from Redis.
    let stores = StoreConfig::Redis(RedisConfig::new(redis.url()).with_key_prefix(&prefix))
        .build()
        .await
        .unwrap();
    let mut logged = Vec::new();
    for _ in 0..250 {
        logged = stores.events.read(&task_id, None, 1000).await.unwrap();
        if logged_updates(&logged) == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        logged_updates(&logged),
        1,
        "the finished turn's chunks are one event in Redis"
    );
    assert_eq!(
        logged.len(),
        items.len() - (CHUNKS.len() - 1),
        "nothing else of the turn was dropped"
    );

    // A client that read the first chunk and reconnects after the end.
    let first_chunk = items
        .iter()
        .find(|i| !updates(std::slice::from_ref(i)).is_empty())
        .and_then(|i| i.id.clone())
        .unwrap();
    let again: Vec<StreamItem> = client
        .resubscribe(&task_id, Some(&first_chunk))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(
        updates(&again),
        [(CHUNKS.concat(), false)],
        "the answer comes whole and replaces the client's copy"
    );
    assert!(again.last().unwrap().event.is_final());
    let got = client.get_task(&task_id, None).await.unwrap();
    assert_eq!(got.answer_text(), CHUNKS.concat());
    server.stop();
}
