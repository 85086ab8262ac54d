//! A turn handed over to another process (its lease taken over while this
//! process stalled) stops here without a final event, and the server writes
//! no end for it: the new owner does. A turn whose events just stop, with no
//! one holding its lease, still ends `failed`. A cancel that reaches a
//! process while it loses a stranded turn to another reaches the winner.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_a2a::{ResumeRequest, RunnerError, TurnEvents, TurnRequest, TurnRunner};
use looopy_core::store::{EventLog, TaskRecord, TaskRecordStore, TurnLock};
use looopy_core::{AgentEvent, EventPayload, TaskState, TaskStatus};
use looopy_stores_memory::MemoryTurnLock;
use serde_json::json;
use support::{SharedStores, builder, eventually, rpc_v1, serve, v1_message};

/// Emits `working`, then (with `hand_over`) lets "another process" take the
/// turn's lease, then ends without a final event.
struct StoppingRunner {
    lock: Arc<MemoryTurnLock>,
    hand_over: bool,
}

#[async_trait]
impl TurnRunner for StoppingRunner {
    async fn run_turn(&self, request: TurnRequest) -> Result<TurnEvents, RunnerError> {
        if self.hand_over {
            self.lock
                .try_acquire(
                    &request.context_id,
                    "another-process",
                    Some(&request.task_id),
                    Duration::from_secs(60),
                )
                .await
                .unwrap();
        }
        let working = AgentEvent::new(
            request.task_id.clone(),
            request.context_id.clone(),
            EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::Working),
                is_final: false,
                metadata: Default::default(),
            },
        );
        Ok(futures::stream::iter([working]).boxed())
    }
}

/// Runs one turn; returns the task's record state and whether its log has a
/// final event, once the turn stopped here.
async fn one_turn(hand_over: bool) -> (TaskState, bool) {
    let stores = SharedStores::default();
    let lock = Arc::new(MemoryTurnLock::new());
    let runner = StoppingRunner {
        lock: lock.clone(),
        hand_over,
    };
    let server = serve(builder(runner, &stores).recovery(lock).build(), &stores).await;
    let sent = rpc_v1(&server.url, "SendMessage", {
        let mut p = v1_message("go");
        p["configuration"] = json!({ "returnImmediately": true });
        p
    })
    .await;
    let task_id = sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"))
        .to_owned();
    // The turn stopped here once its `working` status is recorded.
    eventually(async || {
        let record = stores.tasks.get(&task_id).await.unwrap().unwrap();
        record.status.state != TaskState::Submitted
    })
    .await;
    // Give a (wrong) end time to be written.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let state = stores
        .tasks
        .get(&task_id)
        .await
        .unwrap()
        .unwrap()
        .status
        .state;
    let events = stores.events.read(&task_id, None, 100).await.unwrap();
    let ended = events.iter().any(|e| e.event.is_final());
    server.stop().await;
    (state, ended)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_handed_over_gets_no_end_from_the_process_that_lost_it() {
    assert_eq!(one_turn(true).await, (TaskState::Working, false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_just_stops_still_ends_failed() {
    assert_eq!(one_turn(false).await, (TaskState::Failed, true));
}

/// Tries to resume stranded turns and loses each to another process
/// (`Ok(None)`), once `lost` is raised: until then the attempt is under way.
struct LosingRunner {
    trying: tokio::sync::watch::Sender<bool>,
    lost: tokio::sync::watch::Receiver<bool>,
}

#[async_trait]
impl TurnRunner for LosingRunner {
    async fn run_turn(&self, _request: TurnRequest) -> Result<TurnEvents, RunnerError> {
        Err(RunnerError::new("this test starts no turn"))
    }

    async fn resume_turn(
        &self,
        _request: ResumeRequest,
    ) -> Result<Option<TurnEvents>, RunnerError> {
        self.trying.send_replace(true);
        let _ = self.lost.clone().wait_for(|lost| *lost).await;
        Ok(None)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_a_lost_resume_reaches_the_process_that_won() {
    let stores = SharedStores::default();
    let lock = Arc::new(MemoryTurnLock::new());
    // A turn whose process died: working, its lease lapsed.
    let (task_id, context_id) = ("t-stranded", "c-stranded");
    let record = TaskRecord::new(
        task_id,
        context_id,
        None,
        TaskStatus::new(TaskState::Working),
    );
    assert!(stores.tasks.compare_and_put(&record).await.unwrap());
    lock.try_acquire(
        context_id,
        "dead-process",
        Some(task_id),
        Duration::from_millis(20),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (trying, mut tried) = tokio::sync::watch::channel(false);
    let (lose, lost) = tokio::sync::watch::channel(false);
    let server = builder(LosingRunner { trying, lost }, &stores)
        .recovery(lock)
        .recovery_scan_interval(Duration::from_millis(20))
        .cancel_wait(Duration::from_millis(300))
        .build();
    let server = serve(server, &stores).await;
    // The cancel arrives while this process still tries to resume the turn;
    // then it loses it (the turn runs on in another process).
    tried.wait_for(|t| *t).await.unwrap();
    let losing = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        lose.send_replace(true);
    };
    let (cancelled, ()) = tokio::join!(
        rpc_v1(&server.url, "CancelTask", json!({"id": task_id})),
        losing
    );
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_WORKING",
        "{cancelled}"
    );
    assert!(
        stores.tasks.take_cancel(task_id).await.unwrap(),
        "the process running the turn is asked to cancel it"
    );
    server.stop().await;
}
