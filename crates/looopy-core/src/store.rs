//! Persistence traits. Implementations live in `looopy-stores-memory`,
//! `looopy-stores-sqlite`, `looopy-stores-redis` and
//! `looopy-stores-postgres`; `looopy-testkit` has one conformance suite that
//! every implementation must pass. [`Stores`] bundles one of each.
//!
//! | trait | holds | keyed by |
//! |---|---|---|
//! | [`CheckpointStore`] | loop checkpoints of a running turn | task id |
//! | [`MessageStore`] | conversation history | context id |
//! | [`ArtifactStore`] | artifacts, appended chunk by chunk | context id + artifact id |
//! | [`AgentStateStore`] | agent lifecycle metadata | context id |
//! | [`EventLog`] | ordered events of a task, readable after an id | task id |
//! | [`TurnLock`] | turn ownership: one turn at a time per context, across processes, and the registry of running turns | context id |
//! | [`TaskRecordStore`] | A2A task records (owner, status, event cursors, version; a cancel flag) | task id |
//! | [`PushConfigStore`] | A2A push notification configs (webhooks) | task id + config id |
//! | [`RecordStore`] | execution records of turns, with retention | task id |
//! | [`TurnStore`] | an Agent turn's start and end as one operation each, over the stores above | context id |

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::AgentEvent;
use crate::history::History;
use crate::llm::Usage;
use crate::message::{Message, Part};
use crate::task::{Artifact, TaskState};
use crate::tool::ToolResult;

mod artifact_merge;
mod error;
pub mod follow;
pub mod listing;
pub mod on_history;
mod push;
mod record;
mod stored_event;
mod stores;
mod turn;
pub mod validate;

pub use error::StoreError;
pub use push::{PushAuthentication, PushConfig, PushConfigStore};
pub use record::{RecordRetention, RecordStore};
pub use stored_event::StoredEvent;
pub use stores::Stores;
pub use turn::{
    ArtifactWrite, BegunTurn, HistoryMark, LeaseRequest, LoadedHistory, SeparateStores,
    TurnArtifacts, TurnBegin, TurnBegun, TurnCommit, TurnStore, begin_separately,
    commit_separately,
};

/// The persisted state of a turn in progress.
///
/// `messages` is the whole history the turn works on: what the Agent passed in
/// (`messages[..turn_start]`) followed by what the turn added. A tool call
/// whose result message is present is never run again on resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskCheckpoint {
    /// The task. Shared with the turn's context (a turn takes several
    /// checkpoints; none copies its ids).
    pub task_id: Arc<str>,
    /// The conversation.
    pub context_id: Arc<str>,
    /// The agent.
    pub agent_id: Arc<str>,
    /// Iterations completed or under way (0 before the first).
    pub iteration: u32,
    /// The task's state at the checkpoint.
    pub state: TaskState,
    /// Everything the turn sees.
    pub messages: History,
    /// Where the turn's own messages start in `messages`.
    pub turn_start: usize,
    /// Tokens used so far.
    #[serde(default)]
    pub usage: Usage,
    /// Results of tool calls of the last assistant message that finished
    /// before their batch did (calls run in parallel; results enter
    /// `messages` in the model's order once all are in). Resume runs only the
    /// calls that have neither a result here nor a tool message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completed_tool_results: Vec<ToolResult>,
    /// The assistant messages of this turn whose text was streamed as an
    /// answer artifact, with that artifact's id: a resumed turn announces
    /// them again, whole, so that an answer whose streamed artifact was not
    /// stored before the process died is stored from the checkpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streamed_answers: Vec<StreamedAnswer>,
    /// When set, `messages[..len]` are the first `len` messages of the
    /// conversation's stored history under `epoch` (the Agent started the
    /// turn from the stored history, whole): a store may keep only the
    /// messages after them and read the rest back from the message store
    /// on load, failing with [`StoreError::HistoryRewritten`] when the
    /// history's epoch changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_history: Option<HistoryMark>,
    /// When the turn started.
    pub created_at: DateTime<Utc>,
    /// When this checkpoint was taken.
    pub updated_at: DateTime<Utc>,
    /// Free-form metadata (for instance the turn's input options).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl TaskCheckpoint {
    /// [`stored_history`](Self::stored_history) when it can hold: a mark
    /// longer than the checkpoint's messages says nothing about them.
    pub fn history_mark(&self) -> Option<&HistoryMark> {
        self.stored_history
            .as_ref()
            .filter(|mark| mark.len <= self.messages.len())
    }
}

/// An assistant message of a turn whose text went out as an answer artifact
/// (`artifact-update` events) while the model streamed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamedAnswer {
    /// The artifact the text was streamed to.
    pub artifact_id: String,
    /// The message's position in [`TaskCheckpoint::messages`].
    pub message: usize,
}

/// Loop checkpoints, so that a turn can resume after a crash.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Stores (replaces) the checkpoint of `checkpoint.task_id`.
    async fn save(&self, checkpoint: &TaskCheckpoint) -> Result<(), StoreError>;
    /// The last checkpoint of a task.
    async fn load(&self, task_id: &str) -> Result<Option<TaskCheckpoint>, StoreError>;
    /// Forgets a task's checkpoint.
    async fn delete(&self, task_id: &str) -> Result<(), StoreError>;

    /// [`save`](Self::save), given a checkpoint the caller no longer needs
    /// (the loop's own snapshots): a store that keeps checkpoints as they
    /// are (in memory) takes it instead of copying it. Default: `save`.
    async fn save_owned(&self, checkpoint: TaskCheckpoint) -> Result<(), StoreError> {
        self.save(&checkpoint).await
    }

    /// The store's synchronous save, when it has one: it saves without
    /// waiting on anything (it lives in this process's memory). The loop
    /// then saves each checkpoint in place, as the turn takes it, instead
    /// of handing it to a background writer that overlaps the save with the
    /// turn's next step: for such a store the writer's task and hand-overs
    /// cost more than the save. A store must give the same answer at every
    /// call (the loop asks when it makes a turn's writer). Default: none.
    fn in_place(&self) -> Option<&dyn SaveInPlace> {
        None
    }
}

/// A checkpoint store's save that finishes at once (see
/// [`CheckpointStore::in_place`]): what [`CheckpointStore::save_owned`]
/// does, without a future.
pub trait SaveInPlace: Send + Sync {
    /// Saves `checkpoint`, replacing the task's previous one.
    fn save_now(&self, checkpoint: TaskCheckpoint) -> Result<(), StoreError>;
}

/// Conversation history, per context.
#[async_trait]
pub trait MessageStore: Send + Sync {
    /// Appends messages as one batch: all of them or none, never interleaved
    /// with another batch.
    async fn append(&self, context_id: &str, messages: &[Message]) -> Result<(), StoreError>;
    /// [`append`](Self::append) of shared messages (an Agent's turn hands
    /// over the ones its loop made): a store that keeps messages as they
    /// are (in memory) keeps these without copying them. Default: `append`
    /// of a copy.
    async fn append_shared(
        &self,
        context_id: &str,
        messages: &[Arc<Message>],
    ) -> Result<(), StoreError> {
        let owned: Vec<Message> = messages.iter().map(|m| (**m).clone()).collect();
        self.append(context_id, &owned).await
    }
    /// Messages `range` (clamped to what exists), in order.
    async fn load_range(
        &self,
        context_id: &str,
        range: Range<usize>,
    ) -> Result<Vec<Message>, StoreError>;
    /// All messages, in order.
    async fn load(&self, context_id: &str) -> Result<Vec<Message>, StoreError> {
        self.load_range(context_id, 0..usize::MAX).await
    }
    /// Number of messages.
    async fn count(&self, context_id: &str) -> Result<usize, StoreError>;
    /// Replaces messages `range` with `replacement`, atomically (compaction).
    /// Fails with [`StoreError::Conflict`] when `range` is out of bounds.
    async fn replace_range(
        &self,
        context_id: &str,
        range: Range<usize>,
        replacement: &[Message],
    ) -> Result<(), StoreError>;
    /// Deletes the whole history of a context.
    async fn clear(&self, context_id: &str) -> Result<(), StoreError>;
}

/// An artifact with where it belongs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredArtifact {
    /// The artifact, with every chunk appended so far.
    pub artifact: Artifact,
    /// The conversation.
    pub context_id: String,
    /// The task that made it.
    pub task_id: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// Artifacts, per context.
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// Creates or replaces an artifact.
    async fn put(
        &self,
        context_id: &str,
        task_id: &str,
        artifact: &Artifact,
    ) -> Result<(), StoreError>;
    /// Appends parts to an artifact, creating it (without a name) when missing.
    async fn append_parts(
        &self,
        context_id: &str,
        task_id: &str,
        artifact_id: &str,
        parts: &[Part],
    ) -> Result<(), StoreError>;
    /// One artifact.
    async fn get(
        &self,
        context_id: &str,
        artifact_id: &str,
    ) -> Result<Option<StoredArtifact>, StoreError>;
    /// All artifacts of a context, oldest first.
    async fn list(&self, context_id: &str) -> Result<Vec<StoredArtifact>, StoreError>;
    /// Deletes one artifact.
    async fn delete(&self, context_id: &str, artifact_id: &str) -> Result<(), StoreError>;
    /// Deletes every artifact of a context.
    async fn clear(&self, context_id: &str) -> Result<(), StoreError>;
}

/// Where an Agent is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LifecycleState {
    /// Constructed, nothing loaded.
    Created,
    /// Loading history and metadata.
    Starting,
    /// Idle, ready for a turn.
    Ready,
    /// Running a turn.
    Busy,
    /// Persisted and unloaded; a new Agent for the context continues it.
    Paused,
    /// Stopped for good.
    Shutdown,
    /// Could not start.
    Failed,
}

/// Lifecycle metadata of an Agent, per context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentState {
    /// The conversation.
    pub context_id: String,
    /// The agent.
    pub agent_id: String,
    /// Lifecycle state when saved.
    pub lifecycle: LifecycleState,
    /// Completed turns.
    pub turn_count: u64,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Last turn or lifecycle change.
    pub last_activity: DateTime<Utc>,
    /// The principal that owns the conversation, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// How the last turn ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<LastTurn>,
    /// Free-form metadata (compaction records, task ids...).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// The record of a conversation's last turn, kept in its [`AgentState`]
/// (a typed field rather than metadata: every conversation has one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastTurn {
    /// The turn's task id.
    pub task_id: String,
    /// 1-based number of the turn in the conversation.
    pub turn_number: u64,
    /// The task state it ended in.
    pub state: TaskState,
    /// Why it ended (`finished`, `done_tool`, `max_iterations`,
    /// `input_required`, `cancelled`, `error`).
    pub finish_reason: String,
    /// When it ended.
    pub at: DateTime<Utc>,
}

/// Agent metadata, per context.
#[async_trait]
pub trait AgentStateStore: Send + Sync {
    /// Stores (replaces) the state of `state.context_id`.
    async fn save(&self, state: &AgentState) -> Result<(), StoreError>;
    /// [`save`](Self::save) of a state the caller shares (an Agent's own
    /// snapshot of its state): a store that keeps states as they are (in
    /// memory) keeps this one without copying it. Default: `save`.
    async fn save_shared(&self, state: &Arc<AgentState>) -> Result<(), StoreError> {
        self.save(state).await
    }
    /// The state of a context.
    async fn load(&self, context_id: &str) -> Result<Option<AgentState>, StoreError>;
    /// Forgets a context.
    async fn delete(&self, context_id: &str) -> Result<(), StoreError>;
    /// Contexts owned by `owner`, most recently active first.
    async fn list_by_owner(&self, owner: &str, limit: usize)
    -> Result<Vec<AgentState>, StoreError>;
}

/// Ordered events per task: what SSE resubscription replays.
#[async_trait]
pub trait EventLog: Send + Sync {
    /// Appends an event and returns its id. The log takes a share of the
    /// event (one allocation for the appender, the log and its readers).
    async fn append(&self, task_id: &str, event: Arc<AgentEvent>) -> Result<String, StoreError>;
    /// Events after `after` (from the start when `None`), at most `limit`.
    async fn read(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError>;
    /// Events after `after`, then every new one as it is appended. The stream
    /// ends after the task's final event.
    fn follow<'a>(
        &'a self,
        task_id: &'a str,
        after: Option<String>,
    ) -> BoxStream<'a, Result<StoredEvent, StoreError>>;
    /// Forgets a task's events.
    async fn delete(&self, task_id: &str) -> Result<(), StoreError>;
    /// Rewrites entries of a task's log below its last one: the entries
    /// whose ids are in `remove` go, and each event of `put` takes the
    /// place of the removed entry whose id it carries (every `put` id must
    /// be in `remove`). Order and ids are kept, so a reader after any id
    /// still reads every later event: one after a removed id reads the
    /// `put` event that took a later place. The Agent's server uses it to
    /// keep a finished turn's streamed chunks as one whole artifact.
    ///
    /// `last` is the id of the log's last entry as the caller saw it: when
    /// another event was appended since, or the log is gone, nothing
    /// changes and it returns `Ok(false)`. Ids `remove` names that the log
    /// no longer holds are skipped.
    ///
    /// The default keeps every entry (`Ok(false)`): a log that cannot
    /// rewrite its entries still serves every reader, only with more
    /// events. An invalid call (a `put` id not in `remove`, ids of another
    /// log) is [`StoreError::Conflict`] or [`StoreError::NotFound`].
    async fn replace_entries(
        &self,
        task_id: &str,
        last: &str,
        remove: &[String],
        put: Vec<StoredEvent>,
    ) -> Result<bool, StoreError> {
        let _ = (task_id, last);
        validate::check_replacement(remove, &put)?;
        Ok(false)
    }
}

/// What [`TurnLock::try_acquire`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    /// The lease is now held by the caller (it was free, expired without a
    /// turn, or already the caller's: then it was extended).
    Acquired,
    /// Another owner holds the lease and renews it.
    Held,
    /// The lease of a turn whose owner stopped renewing it (its process
    /// died): the turn must be recovered ([`TurnLock::take_over`]) before
    /// the context takes another one.
    Stranded {
        /// The task of the stranded turn.
        task_id: String,
    },
}

/// A turn lease as the registry lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnLease {
    /// The conversation.
    pub context_id: String,
    /// The task of the turn that holds it (`None` for a lifecycle
    /// operation: clear, compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The owner token of the current holder.
    pub owner: String,
    /// When the lease runs out unless renewed (the store's clock).
    pub expires_at: DateTime<Utc>,
}

/// Turn ownership: one lease per context, so that one turn runs at a time
/// across processes, and a registry of the turns that hold one, so that a
/// turn whose process died is found and taken over by exactly one other.
///
/// A lease is held by an owner token and renewed by it. When it runs out:
/// - a lease taken without a task is free again;
/// - a lease of a turn is *stranded*: [`stranded`](TurnLock::stranded)
///   lists it, [`try_acquire`](TurnLock::try_acquire) refuses it
///   ([`Acquire::Stranded`]), and [`take_over`](TurnLock::take_over) hands
///   it to one new owner, who resumes the turn and then releases it.
#[async_trait]
pub trait TurnLock: Send + Sync {
    /// Takes the lease of `context_id` for `owner`, for the turn of
    /// `task_id` when given.
    async fn try_acquire(
        &self,
        context_id: &str,
        owner: &str,
        task_id: Option<&str>,
        ttl: Duration,
    ) -> Result<Acquire, StoreError>;
    /// Extends the lease; `Ok(false)` when `owner` no longer holds it (an
    /// owner whose lease ran out but was not taken over still holds it).
    async fn renew(&self, context_id: &str, owner: &str, ttl: Duration)
    -> Result<bool, StoreError>;
    /// Gives the lease back; only its owner can. `Ok(false)` when not held by `owner`.
    async fn release(&self, context_id: &str, owner: &str) -> Result<bool, StoreError>;
    /// Hands the stranded lease of `task_id`'s turn to `new_owner`, atomically:
    /// `Ok(true)` for exactly one of any number of concurrent callers, and
    /// only while the lease has run out and still belongs to that turn.
    async fn take_over(
        &self,
        context_id: &str,
        task_id: &str,
        new_owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError>;
    /// Turn leases that have run out, oldest expiry first, at most `limit`.
    async fn stranded(&self, limit: usize) -> Result<Vec<TurnLease>, StoreError>;
    /// The lease of a context as it stands (held, or stranded), `None` when
    /// free: for instance to tell whether a turn was handed over to another
    /// process.
    async fn lease(&self, context_id: &str) -> Result<Option<TurnLease>, StoreError>;
}

/// What the A2A layer knows of a task: who owns it, where it stands, and
/// where its turns sit in the event log.
///
/// The record holds no history and no artifacts: those live in the stores
/// of whatever runs the turns (the Agent's message and artifact stores).
/// Fields added after the first release have defaults, so records written
/// before them still load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The task.
    pub task_id: String,
    /// The conversation it belongs to.
    pub context_id: String,
    /// The principal that created it; only they may see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Its current status.
    pub status: crate::task::TaskStatus,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When its status last changed.
    pub updated_at: DateTime<Utc>,
    /// The id of the last event logged for the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<String>,
    /// The current (or last) turn's events come after this id (`None`: from
    /// the start of the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_start_event_id: Option<String>,
    /// The id of the current turn's final event, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_event_id: Option<String>,
    /// Turns started so far (the current one included).
    #[serde(default)]
    pub turns: u32,
    /// The ids of the messages that started the task's turns, oldest first:
    /// they mark the task's share of its conversation's history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_message_ids: Vec<String>,
    /// The version of the record in its store: set by the store on every
    /// write (the first write gives 1), checked by
    /// [`TaskRecordStore::compare_and_put`]. 0 for a record not read from a store.
    /// A store may keep it apart from the rest of the record.
    #[serde(default)]
    pub version: u64,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl TaskRecord {
    /// A new record (version 0, no events, no turns), created and updated now.
    pub fn new(
        task_id: impl Into<String>,
        context_id: impl Into<String>,
        owner: Option<String>,
        status: crate::task::TaskStatus,
    ) -> Self {
        let now = Utc::now();
        TaskRecord {
            task_id: task_id.into(),
            context_id: context_id.into(),
            owner,
            status,
            created_at: now,
            updated_at: now,
            last_event_id: None,
            turn_start_event_id: None,
            final_event_id: None,
            turns: 0,
            turn_message_ids: Vec::new(),
            version: 0,
            metadata: Map::new(),
        }
    }
}

/// How many times [`TaskRecordStore::update`] reads and tries again when other
/// writers keep winning.
pub const TASK_UPDATE_ATTEMPTS: usize = 64;

/// Task records, so that tasks can be listed and looked up by id.
///
/// Atomicity rules:
/// - every write of a record is atomic and gives it the next
///   [`version`](TaskRecord::version) (the first write gives 1);
/// - [`compare_and_put`](TaskRecordStore::compare_and_put) writes only while the
///   stored version is the one the caller read: of any number of writers
///   that read one version, exactly one wins. Version 0 matches a missing
///   record (and one stored before records had versions);
/// - [`update`](TaskRecordStore::update) is read, change, compare-and-put, tried
///   again when another writer won: no update is lost. Every change of a
///   record that others may change at the same time goes through it (or
///   through `compare_and_put`); [`put`](TaskRecordStore::put) replaces blindly;
/// - the cancel flag of a task is a key of its own, apart from the record:
///   [`request_cancel`](TaskRecordStore::request_cancel) raises it and
///   [`take_cancel`](TaskRecordStore::take_cancel) lowers it and says whether it
///   was raised, atomically, so one request is taken once. Polling it costs
///   no read of the record;
/// - the indexes that [`list`](TaskRecordStore::list) reads may lag a write
///   (they can live apart from the record); `list` returns records as they
///   are stored and never one that no longer matches.
#[async_trait]
pub trait TaskRecordStore: Send + Sync {
    /// Stores (replaces) a record, whatever version is stored; the stored
    /// record gets the next version (`record.version` is ignored).
    async fn put(&self, record: &TaskRecord) -> Result<(), StoreError>;
    /// Stores `record` only when the stored version is `record.version` (0:
    /// no record is stored). `Ok(true)` when written: the stored record then
    /// has version `record.version + 1`. `Ok(false)`: another writer came
    /// first, nothing was written.
    async fn compare_and_put(&self, record: &TaskRecord) -> Result<bool, StoreError>;
    /// One record, with its version.
    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;
    /// Records of `owner` (all owners when `None`), optionally of one context,
    /// most recently updated first, at most `limit`.
    async fn list(
        &self,
        owner: Option<&str>,
        context_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError>;
    /// Forgets a record (and its cancel flag).
    async fn delete(&self, task_id: &str) -> Result<(), StoreError>;
    /// Raises the cancel flag of a task (it expires with the store's TTL).
    async fn request_cancel(&self, task_id: &str) -> Result<(), StoreError>;
    /// Lowers the cancel flag of a task; `Ok(true)` when it was raised. Of
    /// concurrent callers, one sees each request.
    async fn take_cancel(&self, task_id: &str) -> Result<bool, StoreError>;

    /// Reads a record, lets `change` change it and stores it with
    /// [`compare_and_put`](TaskRecordStore::compare_and_put), reading again and
    /// calling `change` again when another writer came first (at most
    /// [`TASK_UPDATE_ATTEMPTS`] times, then [`StoreError::Conflict`]).
    /// `change` returns `false` to leave the record as it is.
    ///
    /// `Ok(Some(record))`: written, `record` as stored (with its new
    /// version). `Ok(None)`: no such record, or `change` declined.
    async fn update(
        &self,
        task_id: &str,
        change: &mut (dyn for<'r> FnMut(&'r mut TaskRecord) -> bool + Send),
    ) -> Result<Option<TaskRecord>, StoreError> {
        for _ in 0..TASK_UPDATE_ATTEMPTS {
            let Some(mut record) = self.get(task_id).await? else {
                return Ok(None);
            };
            if !change(&mut record) {
                return Ok(None);
            }
            if self.compare_and_put(&record).await? {
                record.version += 1;
                return Ok(Some(record));
            }
        }
        Err(StoreError::Conflict {
            message: format!(
                "task record `{task_id}`: other writers won {TASK_UPDATE_ATTEMPTS} times in a row"
            ),
        })
    }
}
