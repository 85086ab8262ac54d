//! Agent turns on the Redis stores through the Redis turn store (one
//! script to start a turn, one to end it): the stored result is the one the
//! store-by-store path leaves, the checkpoint goes after a completed turn
//! and stays after an input-required one, and a replica that holds the
//! history from its last turn still sees what another replica added since.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::Agent;
use looopy_core::store::Stores;
use looopy_core::{LlmResponse, Message, Role, TaskState};
use looopy_testkit::ScriptedLlm;
use looopy_testkit::conformance::UniqueIds;
use serde_json::Value;

use support::{call, client_answer, send, turn};

/// An agent on every Redis store, through the turn store when `combined`.
fn agent(ctx: &str, llm: &ScriptedLlm, stores: &Stores, combined: bool) -> Agent {
    support::every_store(ctx, llm, stores, combined)
        .owner("someone")
        .build()
        .unwrap()
}

/// A message without its generated id.
fn shape(m: &Message) -> Value {
    let mut v = serde_json::to_value(m).unwrap();
    v.as_object_mut().unwrap().remove("messageId");
    v
}

fn conversation() -> ScriptedLlm {
    ScriptedLlm::new()
        .respond(call("lookup", &["l1"]))
        .respond(LlmResponse::text("first answer"))
        .respond(LlmResponse::text("second answer"))
        .respond(call("client", &["c1"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn combined_start_and_end_store_what_the_separate_calls_store() {
    let ids = UniqueIds::new();
    let stores = support::redis_stores(ids.prefix()).await;
    let (combined_ctx, separate_ctx) = (ids.next("ctx"), ids.next("ctx"));
    let mut summaries = Vec::new();
    for (ctx, combined) in [(&combined_ctx, true), (&separate_ctx, false)] {
        let agent = agent(ctx, &conversation(), &stores, combined);
        let mut ends = Vec::new();
        for text in ["look it up", "and again", "ask the client"] {
            ends.push(turn(&agent, text).await.1);
        }
        summaries.push(ends);
    }
    let load = |ctx: &str| {
        let stores = stores.clone();
        let ctx = ctx.to_owned();
        async move { stores.messages.load(&ctx).await.unwrap() }
    };
    let (a, b) = (load(&combined_ctx).await, load(&separate_ctx).await);
    // 3 user messages, a tool call and its result, 2 answers, and the
    // client call waiting for its result.
    assert_eq!(a.len(), 8, "{a:#?}");
    assert_eq!(
        a.iter().map(shape).collect::<Vec<_>>(),
        b.iter().map(shape).collect::<Vec<_>>()
    );
    let (sa, sb) = (
        stores.agents.load(&combined_ctx).await.unwrap().unwrap(),
        stores.agents.load(&separate_ctx).await.unwrap().unwrap(),
    );
    assert_eq!(sa.turn_count, 3);
    assert_eq!(
        (sa.turn_count, sa.owner.clone()),
        (sb.turn_count, sb.owner.clone())
    );
    assert_eq!(
        sa.last_turn.as_ref().map(|t| t.state),
        Some(TaskState::InputRequired)
    );
    assert_eq!(sa.last_turn.map(|t| t.state), sb.last_turn.map(|t| t.state));
    let listed = stores.agents.list_by_owner("someone", 10).await.unwrap();
    assert_eq!(
        listed.len(),
        2,
        "both conversations are indexed under their owner"
    );
    for ends in &summaries {
        assert!(ends.iter().all(|s| s.saved), "{ends:?}");
        for completed in &ends[..2] {
            assert_eq!(completed.state, TaskState::Completed);
            assert!(
                stores
                    .checkpoints
                    .load(&completed.task_id)
                    .await
                    .unwrap()
                    .is_none(),
                "a completed turn's checkpoint is deleted"
            );
        }
        assert!(
            stores
                .checkpoints
                .load(&ends[2].task_id)
                .await
                .unwrap()
                .is_some(),
            "an input-required turn keeps its checkpoint"
        );
    }
    assert!(
        stores.locks.lease(&combined_ctx).await.unwrap().is_none(),
        "the lease is released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_sees_what_another_replica_added_since_its_last_turn() {
    let ids = UniqueIds::new();
    // Two pools on one Redis, as two server processes have.
    let (stores_a, stores_b) = (
        support::redis_stores(ids.prefix()).await,
        support::redis_stores(ids.prefix()).await,
    );
    let ctx = ids.next("ctx");
    let llm_a = ScriptedLlm::new()
        .respond(LlmResponse::text("a one"))
        .respond(LlmResponse::text("a two"))
        .respond(LlmResponse::text("a three"));
    let llm_b = ScriptedLlm::new().respond(LlmResponse::text("b one"));
    let a = agent(&ctx, &llm_a, &stores_a, true);
    let b = agent(&ctx, &llm_b, &stores_b, true);

    turn(&a, "to a 1").await;
    turn(&a, "to a 2").await;
    turn(&b, "to b").await;
    let (_, last) = turn(&a, "to a 3").await;
    assert!(last.saved);

    let sent: Vec<String> = llm_a.requests()[2]
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(Message::text)
        .collect();
    assert_eq!(
        sent,
        [
            "to a 1", "a one", "to a 2", "a two", "to b", "b one", "to a 3"
        ],
        "replica A's third turn sees B's turn, in its place"
    );
    let stored: Vec<String> = stores_a
        .messages
        .load(&ctx)
        .await
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(
        stored,
        [
            "to a 1", "a one", "to a 2", "a two", "to b", "b one", "to a 3", "a three"
        ]
    );
    let state = stores_b.agents.load(&ctx).await.unwrap().unwrap();
    assert_eq!(state.turn_count, 4, "each replica counts the other's turns");
    assert_eq!(last.turn_number, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_reads_a_history_compacted_elsewhere_whole() {
    let ids = UniqueIds::new();
    let (stores_a, stores_b) = (
        support::redis_stores(ids.prefix()).await,
        support::redis_stores(ids.prefix()).await,
    );
    let ctx = ids.next("ctx");
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("one"))
        .respond(LlmResponse::text("two"));
    let a = agent(&ctx, &llm, &stores_a, true);
    turn(&a, "first").await;
    // Another process rewrites the history (as a compaction does).
    stores_b
        .messages
        .replace_range(&ctx, 0..2, &[Message::user("summary of first")])
        .await
        .unwrap();
    turn(&a, "second").await;
    let sent: Vec<String> = llm.requests()[1]
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(Message::text)
        .collect();
    assert_eq!(sent, ["summary of first", "second"]);
    assert_eq!(stores_a.messages.count(&ctx).await.unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_results_reach_a_replica_that_did_not_ask_for_them() {
    // Replica B's turn waits for a client tool; the client's results come
    // to replica A, whose held history predates that call.
    let ids = UniqueIds::new();
    let (stores_a, stores_b) = (
        support::redis_stores(ids.prefix()).await,
        support::redis_stores(ids.prefix()).await,
    );
    let ctx = ids.next("ctx");
    let llm_a = ScriptedLlm::new()
        .respond(LlmResponse::text("hello"))
        .respond(LlmResponse::text("You are in Oslo."));
    let llm_b = ScriptedLlm::new().respond(call("client", &["c1"]));
    let a = agent(&ctx, &llm_a, &stores_a, true);
    let b = agent(&ctx, &llm_b, &stores_b, true);
    turn(&a, "hi").await;
    let (_, asked) = turn(&b, "where am I?").await;
    assert_eq!(asked.state, TaskState::InputRequired);

    let answer = client_answer("c1", serde_json::json!({"city": "Oslo"}));
    let done = send(&a, answer).await;
    assert_eq!(done.state, TaskState::Completed);
    let stored = stores_a.messages.load(&ctx).await.unwrap();
    let roles: Vec<Role> = stored.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(stored[4].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(stored[4].text(), r#"{"city":"Oslo"}"#);
    assert_eq!(stored[5].text(), "You are in Oslo.");
}
