//! Faults: an unreachable server at start, and a server that goes away
//! mid-operation (tried again within the budget, then a clear error;
//! nothing committed is lost).

use crate::support;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use looopy_core::{Message, StoreError};
use looopy_stores_postgres::{PostgresConfig, PostgresError};

#[tokio::test]
async fn an_unreachable_server_at_start_is_unavailable_with_a_message() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut config = PostgresConfig::new(format!("postgres://looopy:secret@127.0.0.1:{port}/db"));
    config.connect_timeout_ms = 500;
    let started = Instant::now();
    let error = looopy_stores_postgres::connect(config.clone())
        .await
        .map(|_| ())
        .expect_err("nothing listens there");
    assert!(started.elapsed() < Duration::from_secs(10));
    let StoreError::Unavailable { message } = &error else {
        panic!("expected Unavailable, got {error:?}");
    };
    assert!(message.contains("cannot be reached"), "{message}");
    assert!(message.contains(&port.to_string()), "{message}");
    assert!(
        !message.contains("secret"),
        "the password stays out: {message}"
    );
    assert!(matches!(
        looopy_stores_postgres::PostgresBackend::connect(config).await,
        Err(PostgresError::Unreachable { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_server_is_waited_for_within_the_budget_then_fails_with_a_message() {
    let Some(pg) = looopy_testkit::own_postgres_or_skip("a_lost_server") else {
        return;
    };
    let mut config = support::config(pg.url()).with_retry_budget_ms(15_000);
    config.connect_timeout_ms = 500;
    let stores = support::stores(config.clone()).await;
    let committed = Message::user("committed");
    stores
        .messages
        .append("ctx", std::slice::from_ref(&committed))
        .await
        .unwrap();

    // The server goes away and comes back 1.5 s later: a read waits for it.
    let mut server = pg.into_server().expect("a server of the test's own");
    server.stop();
    let back = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        server.restart().expect("restart");
        server
    });
    let loaded = stores
        .messages
        .load("ctx")
        .await
        .expect("the read waits for the server");
    assert_eq!(loaded, [committed], "nothing committed is lost");
    let mut server = back.join().expect("restarted");
    // Appends go through again once the server is back.
    stores
        .messages
        .append("ctx", &[Message::user("after")])
        .await
        .unwrap();
    assert_eq!(stores.messages.count("ctx").await.unwrap(), 2);

    // Gone for good: a short budget, then a clear error, and no panic.
    let short = looopy_stores_postgres::stores(
        looopy_stores_postgres::PostgresBackend::connect(config.with_retry_budget_ms(1_000))
            .await
            .unwrap(),
    );
    server.stop();
    let started = Instant::now();
    let error = short
        .messages
        .count("ctx")
        .await
        .expect_err("the server is gone");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let StoreError::Unavailable { message } = &error else {
        panic!("expected Unavailable, got {error:?}");
    };
    assert!(message.contains("check that the server runs"), "{message}");
    let error = short
        .messages
        .append("ctx", &[Message::user("lost")])
        .await
        .expect_err("the server is gone");
    assert!(matches!(error, StoreError::Unavailable { .. }), "{error:?}");
    server.restart().expect("restart");
    assert_eq!(short.messages.count("ctx").await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_begun_before_a_server_restart_ends_after_it() {
    use std::sync::Arc;

    use looopy_core::store::{LeaseRequest, TurnBegin, TurnBegun, TurnCommit};

    let Some(pg) = looopy_testkit::own_postgres_or_skip("a_turn_begun_before_a_restart") else {
        return;
    };
    let stores = support::stores(support::config(pg.url())).await;
    let turns = stores.turns.clone().expect("a turn store");
    let input = [Message::user("go")];
    let begun = turns
        .begin_turn(TurnBegin {
            context_id: "ctx",
            lease: Some(LeaseRequest {
                owner: "owner",
                task_id: Some("task"),
                ttl: Duration::from_secs(60),
            }),
            load_state: false,
            known: None,
            input: &input,
        })
        .await;
    assert!(matches!(begun, Ok(TurnBegun::Begun(_))), "{begun:?}");

    // The server restarts while the turn waits for its model: the
    // connection its start used (kept for the turn's next operation) died.
    let mut server = pg.into_server().expect("a server of the test's own");
    server.stop();
    std::thread::sleep(Duration::from_millis(500));
    server.restart().expect("restart");

    // Its end is not tried again once sent (the messages may have landed),
    // so it must not go to a dead connection.
    let produced = [
        Arc::new(Message::user("go")),
        Arc::new(Message::assistant("done")),
    ];
    turns
        .commit_turn(TurnCommit {
            context_id: "ctx",
            lease_owner: Some("owner"),
            messages: &produced,
            state: None,
            forget_checkpoint: Some("task"),
            artifacts: None,
        })
        .await
        .expect("the turn's end goes through after the restart");
    assert_eq!(stores.messages.count("ctx").await.unwrap(), 2);
    assert_eq!(stores.locks.lease("ctx").await.unwrap(), None, "released");
}
