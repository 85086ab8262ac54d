//! One turn at a time per context: in one Agent, and across Agents sharing
//! a turn lock.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use looopy_agent::{AgentError, BusyHolder, LifecycleState, TurnEnd};
use looopy_core::store::TurnLock;
use looopy_core::store::{Acquire, Stores, TurnLease};
use looopy_core::{LlmResponse, Message, StoreError, TaskState};
use looopy_stores_memory::MemoryTurnLock;
use looopy_testkit::ScriptedLlm;
use support::*;

const LONG: Duration = Duration::from_secs(3600);

/// Memory stores whose turn lock is returned too, to read who holds a lease.
fn stores_with_memory_lock() -> (Arc<MemoryTurnLock>, Stores) {
    let locks = Arc::new(MemoryTurnLock::new());
    let stores = Stores {
        locks: locks.clone(),
        ..looopy_stores_memory::stores()
    };
    (locks, stores)
}

#[tokio::test]
async fn a_second_turn_while_one_runs_is_refused_as_busy() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond_after(LONG, LlmResponse::text("late"))
        .respond(LlmResponse::text("second"));
    let agent = builder("c-busy", &llm, &stores).build().unwrap();
    let mut running = agent
        .execute_turn(Some(Message::user("first")), None)
        .await
        .unwrap();
    assert_eq!(agent.lifecycle(), LifecycleState::Busy);
    // The model call is under way (and has taken the slow script step).
    until(&mut running, |e| e.kind() == "internal:llm-call").await;
    while llm.request_count() == 0 {
        tokio::task::yield_now().await;
    }

    let e = agent
        .execute_turn(Some(Message::user("second")), None)
        .await
        .unwrap_err();
    match &e {
        AgentError::Busy(b) => {
            assert_eq!(b.holder, BusyHolder::ThisAgent);
            assert_eq!(b.context_id, "c-busy");
        }
        other => panic!("expected Busy, got {other:?}"),
    }
    assert!(e.is_busy());
    // A clone is the same agent.
    assert!(
        agent
            .clone()
            .execute_turn(Some(Message::user("third")), None)
            .await
            .unwrap_err()
            .is_busy()
    );
    // Lifecycle operations are refused too, and nothing was written for
    // the refused turns.
    assert!(agent.pause().await.unwrap_err().is_busy());
    assert!(agent.clear().await.unwrap_err().is_busy());
    let stored = stores.messages.load("c-busy").await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].text(), "first");

    running.cancel();
    let s = running.finish().await.unwrap();
    assert_eq!(s.state, TaskState::Canceled);
    let (_, s) = turn(&agent, "second").await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(s.turn_number, 2);
}

#[tokio::test]
async fn concurrent_calls_start_exactly_one_turn() {
    let stores = looopy_stores_memory::stores();
    let llm =
        ScriptedLlm::new().respond_after(Duration::from_millis(50), LlmResponse::text("only"));
    let agent = builder("c-race", &llm, &stores).build().unwrap();
    let (a, b) = tokio::join!(
        agent.execute_turn(Some(Message::user("a")), None),
        agent.execute_turn(Some(Message::user("b")), None)
    );
    let (ok, refused) = match (a, b) {
        (Ok(t), Err(e)) | (Err(e), Ok(t)) => (t, e),
        (a, b) => panic!("expected one turn and one refusal, got {a:?} / {b:?}"),
    };
    assert!(refused.is_busy());
    let s = ok.finish().await.unwrap();
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(llm.request_count(), 1);
    assert_eq!(stores.messages.count("c-race").await.unwrap(), 2);
}

#[tokio::test]
async fn a_shared_turn_lock_makes_another_agent_for_the_context_busy() {
    let (locks, stores) = stores_with_memory_lock();
    let llm_a = ScriptedLlm::new().respond_after(LONG, LlmResponse::text("never"));
    let llm_b = ScriptedLlm::new().respond(LlmResponse::text("b answers"));
    let a = builder("c-shared", &llm_a, &stores)
        .turn_lock(stores.locks.clone())
        .build()
        .unwrap();
    let b = builder("c-shared", &llm_b, &stores)
        .turn_lock(stores.locks.clone())
        .build()
        .unwrap();
    b.start().await.unwrap();

    let running = a
        .execute_turn(Some(Message::user("from a")), None)
        .await
        .unwrap();
    assert!(locks.holder("c-shared").is_some());
    let e = b
        .execute_turn(Some(Message::user("from b")), None)
        .await
        .unwrap_err();
    match e {
        AgentError::Busy(busy) => assert_eq!(busy.holder, BusyHolder::OtherOwner),
        other => panic!("expected Busy, got {other:?}"),
    }
    assert_eq!(b.lifecycle(), LifecycleState::Ready, "b is not stuck");
    assert_eq!(stores.messages.count("c-shared").await.unwrap(), 1);

    running.cancel();
    assert_eq!(running.finish().await.unwrap().end, TurnEnd::Cancelled);
    assert_eq!(locks.holder("c-shared"), None, "the lease is released");

    let (_, s) = turn(&b, "from b").await;
    assert_eq!(s.state, TaskState::Completed);
    // b saw a's (cancelled) turn and counts after it.
    let texts: Vec<String> = llm_b.requests()[0]
        .messages
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, vec!["from a", "from b"]);
    assert_eq!(s.turn_number, 2);
    assert_eq!(locks.holder("c-shared"), None);
}

#[tokio::test(start_paused = true)]
async fn the_lease_is_renewed_while_a_long_turn_runs() {
    let (locks, stores) = stores_with_memory_lock();
    let ttl = Duration::from_millis(300);
    // The model takes ten TTLs to answer (on the paused clock).
    let llm_a = ScriptedLlm::new().respond_after(ttl * 10, LlmResponse::text("slow answer"));
    let a = builder("c-renew", &llm_a, &stores)
        .turn_lock(stores.locks.clone())
        .lock_ttl(ttl)
        .build()
        .unwrap();
    let b = builder("c-renew", &ScriptedLlm::new(), &stores)
        .turn_lock(stores.locks.clone())
        .lock_ttl(ttl)
        .build()
        .unwrap();
    let running = a
        .execute_turn(Some(Message::user("slow")), None)
        .await
        .unwrap();
    // A turn runs on the task that reads it: read on a task of its own.
    let running = tokio::spawn(running.finish());
    let owner = locks.holder("c-renew").unwrap();
    tokio::time::sleep(ttl * 5).await;
    assert_eq!(locks.holder("c-renew"), Some(owner));
    assert!(
        b.execute_turn(Some(Message::user("b")), None)
            .await
            .unwrap_err()
            .is_busy()
    );
    let s = running.await.unwrap().unwrap();
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(locks.holder("c-renew"), None);
}

/// A lock that grants the lease but loses it at the first renewal (as when
/// another process took it over).
struct LosingLock;

#[async_trait]
impl TurnLock for LosingLock {
    async fn try_acquire(
        &self,
        _: &str,
        _: &str,
        _: Option<&str>,
        _: Duration,
    ) -> Result<Acquire, StoreError> {
        Ok(Acquire::Acquired)
    }
    async fn renew(&self, _: &str, _: &str, _: Duration) -> Result<bool, StoreError> {
        Ok(false)
    }
    async fn release(&self, _: &str, _: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    async fn take_over(&self, _: &str, _: &str, _: &str, _: Duration) -> Result<bool, StoreError> {
        Ok(false)
    }
    async fn stranded(&self, _: usize) -> Result<Vec<TurnLease>, StoreError> {
        Ok(Vec::new())
    }
    async fn lease(&self, _: &str) -> Result<Option<TurnLease>, StoreError> {
        Ok(None)
    }
}

#[tokio::test(start_paused = true)]
async fn losing_the_lease_abandons_the_turn_without_writing_more() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond_after(LONG, LlmResponse::text("never"));
    let agent = builder("c-lost", &llm, &stores)
        .turn_lock(Arc::new(LosingLock))
        .lock_ttl(Duration::from_secs(3))
        .build()
        .unwrap();
    let (events, summary) = agent
        .execute_turn(Some(Message::user("hello")), None)
        .await
        .unwrap()
        .collect_all()
        .await;
    // The new owner carries the turn on: no final event, no summary, and
    // only the input saved before the turn is in the store.
    assert!(events.iter().all(|e| !e.is_final()), "{events:?}");
    assert!(summary.is_none());
    assert_eq!(stores.messages.count("c-lost").await.unwrap(), 1);
    assert_eq!(agent.turn_count(), 0);
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
}

#[tokio::test(start_paused = true)]
async fn the_lease_is_renewed_while_a_slow_compaction_runs() {
    let (locks, stores) = stores_with_memory_lock();
    let ttl = Duration::from_millis(300);
    // Two quick turns, then a summary that takes ten TTLs to come.
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("one"))
        .respond(LlmResponse::text("two"))
        .respond_after(ttl * 10, LlmResponse::text("the summary"));
    let agent = builder("c-compact", &llm, &stores)
        .turn_lock(stores.locks.clone())
        .lock_ttl(ttl)
        .compaction(looopy_agent::CompactionConfig::default().keep_recent(1))
        .build()
        .unwrap();
    turn(&agent, "first").await;
    turn(&agent, "second").await;
    let compacting = tokio::spawn({
        let agent = agent.clone();
        async move { agent.compact().await }
    });
    tokio::time::sleep(ttl * 5).await;
    let holder = locks.holder("c-compact");
    assert!(holder.is_some(), "the lease ran out during the compaction");
    let report = compacting.await.unwrap().unwrap();
    assert!(report.is_some(), "the compaction ran");
    assert_eq!(locks.holder("c-compact"), None, "released at its end");
}
