//! One conformance suite for every implementation of the store traits of
//! [`looopy_core::store`].
//!
//! A backend runs all of it on its [`Stores`] bundle with one line:
//!
//! ```
//! use looopy_core::store::Stores;
//! use looopy_testkit::conformance::{UniqueIds, run_all};
//!
//! async fn check_my_stores(stores: &Stores) {
//!     run_all(stores, &UniqueIds::new()).await;
//! }
//! ```
//!
//! A backend's [`TurnStore`](looopy_core::store::TurnStore) (`Stores::turns`)
//! is checked on its own ([`turn_store`]): its rules hold for the default
//! methods over the other stores too.
//!
//! Or one trait at a time ([`message_store`], [`event_log`], [`task_store`], ...). Failures
//! panic with a message naming the broken rule. Every key the suite writes
//! starts with the [`UniqueIds`] prefix of the run (random by default), so
//! runs never collide on a shared backend, in parallel or not. Run it on a
//! multi-threaded runtime (`#[tokio::test(flavor = "multi_thread")]`) to give
//! the concurrency checks real parallelism, and never with a paused clock:
//! lease expiry is checked with real sleeps.
//!
//! What it holds implementations to, beyond the trait docs:
//!
//! - Every serde field of every stored value comes back equal (timestamps to
//!   the nanosecond, JSON metadata of every type).
//! - Missing keys read as `None` / empty / `0`; deleting or clearing a missing
//!   key succeeds.
//! - [`MessageStore`]: concurrent batches never interleave and a reader never
//!   sees part of a batch; `replace_range` accepts any `start <= end <= len`
//!   (including empty ranges, which insert) and fails with
//!   [`StoreError::Conflict`] otherwise, changing nothing.
//! - [`ArtifactStore`]: `append_parts` creates a missing artifact (no name,
//!   the given task id) and concurrent appends lose and interleave nothing;
//!   `put` on an existing id replaces its content but keeps `created_at` and
//!   its place in `list` (creation order).
//! - [`AgentStateStore`]: `list_by_owner` follows owner changes and deletes.
//! - [`EventLog`]: ids are distinct; `read` pages with `after`; `follow`
//!   replays, then yields live events, ends after the first final event, ends
//!   at once when the log already ended before `after`, and can start before
//!   the task's first event.
//! - [`TurnLock`]: the owner may re-acquire (which extends); others may not
//!   until the lease expires; renew and release work for the owner only, and
//!   not after expiry; of many concurrent acquirers exactly one wins. A turn's
//!   lease that ran out is stranded: listed, refused to new turns with its
//!   task id, renewable by its owner until one of many concurrent take-overs
//!   wins it.
//! - [`TaskRecordStore`]: `list` is most recently updated first with ties broken
//!   by task id (ascending), follows owner and context changes and deletes,
//!   lists a record under its final owner only after concurrent puts, and a
//!   limit of 0 lists nothing.
//! - [`RecordStore`](looopy_core::store::RecordStore) ([`record_store`], run
//!   by `run_all` when the bundle has one): the records a
//!   [`Recorder`](looopy_core::record::Recorder) writes for a tool-using
//!   turn with a retried model call, a failed tool call and a compaction,
//!   and for a turn recovered after its process died, come back with their
//!   steps in order and their durations; a task's turns keep a record each
//!   (`get` the latest, `list_task` oldest first, `delete` all of them);
//!   retention caps (per turn) and ages records.
//!
//! - [`BlobStore`](looopy_core::BlobStore) ([`blob_store`], run by each
//!   blob backend with a [`BlobBackdoor`] that damages stored content):
//!   bodies of every size round trip with their SHA-256, ranges read those
//!   bytes, a write past the size limit or whose body failed leaves
//!   nothing, damaged content ends a whole read with
//!   [`BlobError::ChecksumMismatch`](looopy_core::BlobError), and the
//!   listing has every blob under a prefix with its size and age.
//!
//! [`MessageStore`]: looopy_core::store::MessageStore
//! [`ArtifactStore`]: looopy_core::store::ArtifactStore
//! [`AgentStateStore`]: looopy_core::store::AgentStateStore
//! [`EventLog`]: looopy_core::store::EventLog
//! [`TurnLock`]: looopy_core::store::TurnLock
//! [`TaskRecordStore`]: looopy_core::store::TaskRecordStore

mod agents;
mod artifacts;
pub mod blobs;
mod cache;
mod events;
mod fixtures;
mod locks;
mod messages;
mod push_configs;
mod records;
mod task_records;
mod tasks;
mod turns;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use looopy_core::StoreError;
use looopy_core::store::Stores;

pub use agents::agent_state_store;
pub use artifacts::artifact_store;
pub use blobs::{BlobBackdoor, blob_store};
pub use cache::cache_store;
pub use events::event_log;
pub use locks::turn_lock;
pub use messages::message_store;
pub use push_configs::push_config_store;
pub use records::record_store;
pub use task_records::{task_store, task_store_across_handles};
pub use tasks::task_state_store;
pub use turns::turn_store;

/// Makes ids (context, task, owner, artifact) that no other run uses.
#[derive(Debug)]
pub struct UniqueIds {
    prefix: String,
    next: AtomicU64,
}

impl UniqueIds {
    /// Ids under a random prefix.
    pub fn new() -> Self {
        Self::with_prefix(format!("conformance-{}", uuid::Uuid::new_v4().simple()))
    }

    /// Ids under `prefix` (which should itself be unique).
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        UniqueIds {
            prefix: prefix.into(),
            next: AtomicU64::new(1),
        }
    }

    /// The prefix of every id, for cleaning up a shared backend afterwards.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A fresh id: `<prefix>-<what>-<n>`.
    pub fn next(&self, what: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}-{what}-{n}", self.prefix)
    }
}

impl Default for UniqueIds {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs the whole suite on every store of the bundle but its turn store,
/// with keys under the prefix of `ids`; panics at the first broken rule.
pub async fn run_all(stores: &Stores, ids: &UniqueIds) {
    task_state_store(Arc::clone(&stores.checkpoints), ids).await;
    message_store(Arc::clone(&stores.messages), ids).await;
    artifact_store(Arc::clone(&stores.artifacts), ids).await;
    agent_state_store(Arc::clone(&stores.agents), ids).await;
    event_log(Arc::clone(&stores.events), ids).await;
    turn_lock(Arc::clone(&stores.locks), ids).await;
    task_store(Arc::clone(&stores.task_records), ids).await;
    push_config_store(Arc::clone(&stores.push_configs), ids).await;
    if let Some(records) = &stores.records {
        record_store(Arc::clone(records), ids).await;
    }
}

/// Unwraps a store result, naming the operation when it failed.
#[track_caller]
fn ok<T>(result: Result<T, StoreError>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("conformance: {what} failed: {e}"),
    }
}

/// Awaits `future`, failing instead of hanging when it takes minutes.
async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(30), future).await {
        Ok(output) => output,
        Err(_) => panic!("conformance: {what} did not finish within 30 s (hung?)"),
    }
}

/// Awaits a spawned check, re-raising its panic.
async fn join<T>(handle: tokio::task::JoinHandle<T>) -> T {
    match handle.await {
        Ok(value) => value,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("conformance: a spawned check did not finish: {e}"),
    }
}
