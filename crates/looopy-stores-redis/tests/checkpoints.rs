//! Checkpoint saves: one script call each, only new messages sent, and a
//! full rewrite whenever what is stored is not what this store last saw.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::store::TaskCheckpoint;
use looopy_core::{History, Message};
use looopy_testkit::RedisServer;
use looopy_testkit::checkpoints;

fn checkpoint(task: &str, messages: History, iteration: u32) -> TaskCheckpoint {
    TaskCheckpoint {
        iteration,
        turn_start: 1,
        ..checkpoints::working("ctx", task, messages)
    }
}

/// `calls` of a command so far, from `INFO commandstats`.
async fn calls(client: &redis::Client, command: &str) -> u64 {
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_history_is_saved_with_one_script_call_that_sends_only_new_messages() {
    // Counts commands, so it needs a server of its own.
    let server = RedisServer::start().unwrap();
    let stores = support::stores(support::config(&server.url())).await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut history = History::from(vec![Message::user("q")]);
    stores
        .checkpoints
        .save(&checkpoint("t", history.clone(), 0))
        .await
        .unwrap();
    let (evals, dels, pushes) = (
        calls(&client, "evalsha").await,
        calls(&client, "del").await,
        calls(&client, "rpush").await,
    );
    for n in 1..=20 {
        history.push(Message::assistant(format!("step {n}")));
        let cp = checkpoint("t", history.clone(), n);
        stores.checkpoints.save(&cp).await.unwrap();
        // A save that adds nothing (the loop checkpoints around tool calls).
        stores.checkpoints.save(&cp).await.unwrap();
    }
    assert_eq!(
        calls(&client, "evalsha").await - evals,
        40,
        "one script call per save, nothing else"
    );
    assert_eq!(
        calls(&client, "del").await - dels,
        0,
        "an extended history is never rewritten"
    );
    assert_eq!(
        calls(&client, "rpush").await - pushes,
        20,
        "only the new message is pushed, and nothing when none is new"
    );
    let loaded = stores.checkpoints.load("t").await.unwrap().unwrap();
    assert_eq!(loaded.messages.to_vec(), history.to_vec());
    assert_eq!(loaded.iteration, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_by_another_process_or_a_rewritten_history_forces_a_full_write() {
    let redis = support::redis();
    let config = support::config(redis.url());
    let a = support::stores(config.clone()).await;
    let b = looopy_stores_redis::connect(config).await.unwrap(); // another process
    let mut history = History::from(vec![Message::user("q"), Message::assistant("a1")]);
    a.checkpoints
        .save(&checkpoint("t", history.clone(), 1))
        .await
        .unwrap();

    // B resumes the task, adds two messages and saves.
    let mut theirs = b.checkpoints.load("t").await.unwrap().unwrap().messages;
    theirs.push(Message::assistant("b1"));
    theirs.push(Message::assistant("b2"));
    b.checkpoints
        .save(&checkpoint("t", theirs.clone(), 2))
        .await
        .unwrap();

    // A, which does not know, saves its own extension: same length as what B
    // stored would have been after one more message, but another epoch.
    history.push(Message::assistant("a2"));
    history.push(Message::assistant("a3"));
    a.checkpoints
        .save(&checkpoint("t", history.clone(), 3))
        .await
        .unwrap();
    assert_eq!(
        b.checkpoints
            .load("t")
            .await
            .unwrap()
            .unwrap()
            .messages
            .to_vec(),
        history.to_vec(),
        "the last save wins whole: never B's messages with A's appended"
    );

    // B saves again on top of what it thinks is stored: detected, rewritten.
    theirs.push(Message::assistant("b3"));
    b.checkpoints
        .save(&checkpoint("t", theirs.clone(), 4))
        .await
        .unwrap();
    assert_eq!(
        a.checkpoints
            .load("t")
            .await
            .unwrap()
            .unwrap()
            .messages
            .to_vec(),
        theirs.to_vec()
    );

    // A history that shrank (compaction) or changed is written anew.
    let compacted = History::from(vec![Message::user("summary"), Message::assistant("x")]);
    a.checkpoints
        .save(&checkpoint("t", compacted.clone(), 5))
        .await
        .unwrap();
    assert_eq!(
        a.checkpoints
            .load("t")
            .await
            .unwrap()
            .unwrap()
            .messages
            .to_vec(),
        compacted.to_vec()
    );
    // And deleting forgets it everywhere.
    b.checkpoints.delete("t").await.unwrap();
    let mut more = compacted.clone();
    more.push(Message::user("y"));
    a.checkpoints
        .save(&checkpoint("t", more.clone(), 6))
        .await
        .unwrap();
    assert_eq!(
        b.checkpoints
            .load("t")
            .await
            .unwrap()
            .unwrap()
            .messages
            .to_vec(),
        more.to_vec(),
        "a save after another process deleted the task writes everything"
    );
    a.checkpoints.delete("t").await.unwrap();
}
