//! A turn handed over to another process (its lease taken over while this
//! process stalled) stops here without a final event, and the server writes
//! no end for it: the new owner does. A turn whose events just stop, with no
//! one holding its lease, still ends `failed`.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_a2a::{RunnerError, TurnEvents, TurnRequest, TurnRunner};
use looopy_core::store::{EventLog, TaskRecordStore, TurnLock};
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
