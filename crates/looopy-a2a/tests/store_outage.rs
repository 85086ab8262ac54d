//! A blocking `SendMessage` whose turn ends while the task store fails:
//! the turn's end is saved once the store answers again, and the blocking
//! call answers with it (not with the `working` task and its answer
//! artifact, as when the end was written once, best effort); a store that stays down past the cancel wait gets
//! the caller a JSON-RPC error naming the task, never the task in a state
//! its turn has left. GetTask afterwards shows the true end.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use looopy_a2a::{A2aClient, A2aClientError, SendRequest, SendResponse};
use looopy_core::StoreError;
use looopy_core::TaskState;
use looopy_core::store::{TaskRecord, TaskRecordStore};
use looopy_stores_memory::MemoryTaskRecordStore;
use support::{SharedStores, Step, chunk, finish, working};
use tokio::sync::Semaphore;

/// The memory task store, which fails every call while it is down (as a
/// Redis that stopped answering does), or only its writes (as a write that
/// timed out while the store stalled, read again once it answers).
#[derive(Default)]
struct Outage {
    inner: MemoryTaskRecordStore,
    down: AtomicBool,
    writes_down: AtomicBool,
}

impl Outage {
    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn set_writes_down(&self, down: bool) {
        self.writes_down.store(down, Ordering::SeqCst);
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(unavailable());
        }
        Ok(())
    }

    fn check_write(&self) -> Result<(), StoreError> {
        self.check()?;
        if self.writes_down.load(Ordering::SeqCst) {
            return Err(unavailable());
        }
        Ok(())
    }
}

fn unavailable() -> StoreError {
    StoreError::Unavailable {
        message: "the test took the task store down".into(),
    }
}

#[async_trait]
impl TaskRecordStore for Outage {
    async fn put(&self, record: &TaskRecord) -> Result<(), StoreError> {
        self.check_write()?;
        self.inner.put(record).await
    }

    async fn compare_and_put(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        self.check_write()?;
        self.inner.compare_and_put(record).await
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.check()?;
        self.inner.get(task_id).await
    }

    async fn list(
        &self,
        owner: Option<&str>,
        context_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.check()?;
        self.inner.list(owner, context_id, limit).await
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        self.check_write()?;
        self.inner.delete(task_id).await
    }

    async fn request_cancel(&self, task_id: &str) -> Result<(), StoreError> {
        self.check_write()?;
        self.inner.request_cancel(task_id).await
    }

    async fn take_cancel(&self, task_id: &str) -> Result<bool, StoreError> {
        self.check_write()?;
        self.inner.take_cancel(task_id).await
    }
}

/// A server on the `Outage` store whose one turn works, streams its answer,
/// waits at `gate`, then completes; blocking calls wait `cancel_wait` for a
/// turn's end to be saved.
async fn server(
    store: Arc<Outage>,
    gate: Arc<Semaphore>,
    cancel_wait: Duration,
) -> support::TestServer {
    let runner = support::ScriptedRunner::new(vec![vec![
        working(),
        chunk("the answer", true, true),
        Step::Gate(gate),
        finish(TaskState::Completed, "the answer"),
    ]]);
    let stores = SharedStores::default();
    let server = looopy_a2a::A2aServer::builder(runner, stores.events.clone(), store)
        .cancel_poll_interval(Duration::from_millis(20))
        .cancel_wait(cancel_wait)
        .build();
    support::serve(server, &stores).await
}

/// Starts a blocking send, and waits until its turn works (at the gate).
async fn blocking_send_at_the_gate(
    url: &str,
    store: &Outage,
) -> tokio::task::JoinHandle<Result<SendResponse, A2aClientError>> {
    let client = A2aClient::new(url);
    let send = tokio::spawn(async move { client.send(&SendRequest::text("go")).await });
    for _ in 0..500 {
        let records = store.inner.list(None, None, 10).await.unwrap();
        if records
            .first()
            .is_some_and(|r| r.status.state == TaskState::Working)
        {
            return send;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the turn never started working");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_answer_waits_for_the_end_to_be_saved_after_a_short_outage() {
    let store = Arc::new(Outage::default());
    let gate = Arc::new(Semaphore::new(0));
    let server = server(store.clone(), gate.clone(), Duration::from_secs(10)).await;
    let send = blocking_send_at_the_gate(&server.url, &store).await;

    // Writes fail just as the turn ends, for far less than the cancel wait:
    // the turn's end is not saved at the first try, while the record can
    // be read (it still says `working`).
    store.set_writes_down(true);
    gate.add_permits(1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    store.set_writes_down(false);

    let answer = tokio::time::timeout(Duration::from_secs(10), send)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let SendResponse::Task(task) = answer else {
        panic!("expected a task: {answer:?}");
    };
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(task.artifacts.len(), 1);
    let again = A2aClient::new(&server.url)
        .get_task(&task.id, None)
        .await
        .unwrap();
    assert_eq!(again.status.state, TaskState::Completed);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_outage_answers_a_json_rpc_error_and_the_end_is_saved_later() {
    let store = Arc::new(Outage::default());
    let gate = Arc::new(Semaphore::new(0));
    let server = server(store.clone(), gate.clone(), Duration::from_millis(300)).await;
    let send = blocking_send_at_the_gate(&server.url, &store).await;

    // Down until the blocking call has answered: longer than the cancel
    // wait.
    store.set_down(true);
    gate.add_permits(1);
    let answer = tokio::time::timeout(Duration::from_secs(10), send)
        .await
        .unwrap()
        .unwrap();
    let Err(A2aClientError::Rpc(error)) = answer else {
        panic!("expected a JSON-RPC error: {answer:?}");
    };
    assert_eq!(error.code, -32603, "{error}");
    assert!(
        error.message.contains("task store was unreachable"),
        "{error}"
    );
    let task_id = error.data.as_ref().unwrap()[0]["metadata"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Back: the turn's end, which the server kept trying, is saved.
    store.set_down(false);
    let client = A2aClient::new(&server.url);
    let mut state = TaskState::Working;
    for _ in 0..100 {
        state = client.get_task(&task_id, None).await.unwrap().status.state;
        if state.ends_turn() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, TaskState::Completed);
    server.stop().await;
}
