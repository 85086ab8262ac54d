//! Redis going away: typed errors within bounded time, no partial writes,
//! reconnection when it is back. Uses a server of its own (never the shared
//! one), which it kills, pauses and restarts.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::future::Future;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use looopy_core::store::Acquire;
use looopy_core::store::Stores;
use looopy_core::{AgentEvent, EventPayload, Message, StoreError};
use looopy_stores_redis::RedisConfig;
use looopy_testkit::RedisServer;

/// Far above the configured timeouts: only a hang gets here.
const HANG: Duration = Duration::from_secs(30);

fn config(server: &RedisServer) -> RedisConfig {
    support::config(&server.url())
        .with_pool_size(2)
        .with_timeouts(Duration::from_millis(500), Duration::from_millis(800))
        .with_follow_block(Duration::from_millis(200))
}

async fn bounded<T>(what: &str, op: impl Future<Output = T>) -> T {
    match tokio::time::timeout(HANG, op).await {
        Ok(value) => value,
        Err(_) => panic!("{what} hung while Redis was away"),
    }
}

fn unavailable<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) {
    assert!(
        matches!(result, Err(StoreError::Unavailable { .. })),
        "{what} must fail with Unavailable, got {result:?}"
    );
}

fn batch(tag: &str) -> Vec<Message> {
    (0..5)
        .map(|n| Message::user(format!("{tag} {n}")))
        .collect()
}

fn text(task: &str, text: &str) -> AgentEvent {
    AgentEvent::new(
        task.into(),
        "ctx".into(),
        EventPayload::Text { text: text.into() },
    )
}

/// Every kind of operation works.
async fn all_work(stores: &Stores, round: &str) {
    let ctx = format!("ctx-{round}");
    stores.messages.append(&ctx, &batch(round)).await.unwrap();
    assert_eq!(stores.messages.count(&ctx).await.unwrap(), 5);
    assert!(
        stores
            .locks
            .try_acquire(&ctx, "me", None, Duration::from_secs(30))
            .await
            .unwrap()
            == Acquire::Acquired
    );
    assert!(stores.locks.release(&ctx, "me").await.unwrap());
    let id = stores
        .events
        .append(&ctx, Arc::new(text(&ctx, "x")))
        .await
        .unwrap();
    assert_eq!(stores.events.read(&ctx, None, 10).await.unwrap()[0].id, id);
    assert!(stores.checkpoints.load(&ctx).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_gives_unavailable_and_a_restarted_one_works_again() {
    let mut server = RedisServer::start().unwrap();
    let stores = support::stores(config(&server)).await;
    all_work(&stores, "before").await;

    // A follower waiting for events when the server dies.
    let mut follower = stores.events.follow("live", None);
    let waiting = tokio::spawn({
        let events = stores.events.clone();
        async move {
            let mut follower = events.follow("live", None);
            follower.next().await.map(|r| r.map(|e| e.id))
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    server.kill();
    unavailable(
        "append",
        bounded("append", stores.messages.append("c", &batch("during"))).await,
    );
    unavailable("count", bounded("count", stores.messages.count("c")).await);
    unavailable(
        "try_acquire",
        bounded(
            "try_acquire",
            stores
                .locks
                .try_acquire("c", "me", None, Duration::from_secs(1)),
        )
        .await,
    );
    unavailable(
        "event append",
        bounded(
            "event append",
            stores.events.append("t", Arc::new(text("t", "x"))),
        )
        .await,
    );
    unavailable("load", bounded("load", stores.checkpoints.load("t")).await);
    let got = bounded("follow", follower.next()).await;
    assert!(
        matches!(got, Some(Err(StoreError::Unavailable { .. }))),
        "a follower must end with Unavailable, got {got:?}"
    );
    assert!(
        bounded("follow", follower.next()).await.is_none(),
        "then it ends"
    );
    let got = bounded("waiting follower", waiting).await.unwrap();
    assert!(
        matches!(got, Some(Err(StoreError::Unavailable { .. }))),
        "a blocked follower must end with Unavailable, got {got:?}"
    );

    // Nothing answers on the port: new connections are refused.
    unavailable(
        "count while down",
        bounded("count", stores.messages.count("c")).await,
    );

    server.restart().unwrap();
    // The pool reconnects: every operation works at its first try.
    all_work(&stores, "after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_between_operations_is_invisible_to_reads() {
    let mut server = RedisServer::start().unwrap();
    let stores = support::stores(config(&server)).await;
    all_work(&stores, "before").await;
    // The held connections break while idle.
    server.restart().unwrap();
    // A read on a broken connection is retried on a fresh one.
    assert_eq!(stores.messages.count("ctx-before").await.unwrap(), 0);
    all_work(&stores, "after").await;
}

fn signal(server: &RedisServer, signal: &str) {
    let pid = server.pid().unwrap().to_string();
    let status = Command::new("kill").args([signal, &pid]).status().unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_times_out_and_never_leaves_part_of_a_batch() {
    let server = RedisServer::start().unwrap();
    let stores = support::stores(config(&server)).await;
    let (first, second) = (batch("first"), batch("second"));
    stores.messages.append("c", &first).await.unwrap();

    signal(&server, "-STOP");
    let append = bounded("append", stores.messages.append("c", &second)).await;
    let count = bounded("count", stores.messages.count("c")).await;
    signal(&server, "-CONT");
    unavailable("append to a paused server", append);
    unavailable("count on a paused server", count);

    // The append reached the server before it paused and may have been run
    // when it went on: the outcome is unknown to the caller, but it is the
    // whole batch or nothing.
    let mut stored = None;
    for _ in 0..50 {
        match stores.messages.load("c").await {
            Ok(messages) => {
                stored = Some(messages);
                break;
            }
            Err(StoreError::Unavailable { .. }) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let stored = stored.expect("Redis answers again after SIGCONT");
    assert!(
        stored == first || stored == [first.clone(), second].concat(),
        "a batch lands whole or not at all, got {} messages",
        stored.len()
    );
    all_work(&stores, "after").await;
}
