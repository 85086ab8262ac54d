//! Two servers ("processes") sharing Redis stores serve the same tasks:
//! a stream dropped on one is resumed on the other, and a task running on
//! one is cancelled through the other.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_a2a::A2aServer;
use looopy_core::TaskState;
use looopy_core::store::Stores;
use looopy_stores_redis::RedisConfig;
use looopy_testkit::conformance::UniqueIds;
use serde_json::json;
use support::*;
use tokio::sync::Semaphore;

async fn redis_stores() -> Option<(looopy_testkit::TestRedis, Stores)> {
    let redis = match looopy_testkit::test_redis() {
        Ok(r) => r,
        Err(e) if std::env::var("LOOOPY_SKIP_EXTERNAL").as_deref() == Ok("1") => {
            eprintln!("\n!!!!! SKIPPED: no Redis ({e}) (LOOOPY_SKIP_EXTERNAL=1) !!!!!\n");
            return None;
        }
        Err(e) => panic!(
            "no Redis for the tests: {e} (run `scripts/provision.sh redis`, or set LOOOPY_TEST_REDIS_URL)"
        ),
    };
    let config =
        RedisConfig::new(redis.url()).with_key_prefix(UniqueIds::new().prefix().to_owned());
    let stores = looopy_stores_redis::connect(config).await.unwrap();
    Some((redis, stores))
}

fn server(runner: ScriptedRunner, stores: &Stores) -> A2aServer {
    A2aServer::builder(runner, stores.events.clone(), stores.task_records.clone())
        .cancel_poll_interval(std::time::Duration::from_millis(20))
        .build()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_on_redis_serve_the_same_tasks() {
    let Some((_redis, stores)) = redis_stores().await else {
        return;
    };
    let shared = SharedStores::default(); // only for `serve`'s bookkeeping
    let gate = Arc::new(Semaphore::new(0));
    let a_runner = ScriptedRunner::new(vec![
        vec![
            working(),
            chunk("one ", true, false),
            Step::Gate(gate.clone()),
            chunk("two", false, true),
            finish(TaskState::Completed, "one two"),
        ],
        vec![working(), Step::UntilCancelled],
    ]);
    let a = serve(server(a_runner, &stores), &shared).await;
    let b = serve(server(ScriptedRunner::hello(), &stores), &shared).await;

    // Stream on A, drop it midway, resume on B.
    let mut first = stream_v1(&a.url, v1_message("count")).await;
    let task_id = first.next().await.unwrap().data["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    first.next().await.unwrap(); // working
    let seen = first.next().await.unwrap().id.unwrap(); // "one "
    drop(first);
    let mut on_b = sse(
        &b.url,
        None,
        &[("last-event-id", &seen)],
        "tasks/resubscribe",
        json!({"id": task_id}),
    )
    .await;
    gate.add_permits(1);
    let first_on_b = on_b.next().await.unwrap();
    // "two" as it came, or (when the turn ended before B read it) the
    // answer whole, in its place: the client builds the same text.
    let update = &first_on_b.data["result"];
    let text = update["artifact"]["parts"][0]["text"].as_str().unwrap();
    let built = if update["append"] == true {
        format!("one {text}")
    } else {
        text.to_owned()
    };
    assert_eq!(built, "one two");
    let rest = on_b.rest().await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].data["result"]["final"], true);
    let logged: Vec<String> = stores
        .events
        .read(&task_id, Some(&seen), 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(
        vec![first_on_b.id.clone().unwrap(), rest[0].id.clone().unwrap()],
        logged
    );
    let got = rpc(&b.url, Some("1.0"), "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["result"]["artifacts"][0]["parts"][0]["text"], "one two");

    // A task running on A, cancelled through B.
    let r = rpc(&a.url, Some("1.0"), "SendMessage", {
        let mut p = v1_message("forever");
        p["configuration"] = json!({"returnImmediately": true});
        p
    })
    .await;
    let long = r["result"]["task"]["id"].as_str().unwrap().to_owned();
    let c = rpc(&b.url, Some("1.0"), "CancelTask", json!({"id": long})).await;
    assert_eq!(c["result"]["status"]["state"], "TASK_STATE_CANCELED", "{c}");

    for t in [&task_id, &long] {
        stores.events.delete(t).await.unwrap();
        stores.task_records.delete(t).await.unwrap();
    }
}
