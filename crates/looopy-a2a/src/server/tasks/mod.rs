//! [`Tasks`]: starts turns, runs them detached from any connection, records
//! their events in the [`EventLog`] and their state in the [`TaskRecordStore`],
//! cancels them.
//!
//! All state that another server process needs lives in the two stores: the
//! only thing kept in memory is the cancellation token of each turn running
//! here. Every change of a record is one atomic update of the store
//! (compare-and-put, tried again when another process wrote first), made
//! only while the record is still at the turn that makes it. A cancel
//! request for a turn running in another process raises the task's cancel
//! flag in the store, which the running process takes (a cheap check, no
//! read of the record).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use looopy_core::store::{EventLog, StoredEvent, TaskRecord, TaskRecordStore, TurnLock};
use looopy_core::{
    AgentEvent, AuthContext, CancellationToken, EventPayload, Message, TaskState, TaskStatus,
};
use serde_json::Map;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::RpcError;
use crate::model::SendParams;
use crate::runner::{RunnerError, TurnEvents, TurnRequest, TurnRunner};
use crate::server::progress;

mod cancel;
mod compact;
mod query;
mod reader;
mod recovery;

pub(crate) use reader::TurnReader;

/// Where a started turn is.
#[derive(Debug)]
pub(crate) struct Started {
    pub(crate) task_id: String,
    /// The turn's events come after this log id (`None`: from the start).
    pub(crate) after: Option<String>,
    /// Held by the stream that reads the turn for this request, until it
    /// has read the turn's end; dropped at once by a request that does
    /// not stream.
    pub(crate) reader: TurnReader,
}

struct Running {
    cancel: CancellationToken,
    phase: watch::Receiver<Phase>,
    /// Handed to each stream that follows the turn while it runs here
    /// ([`Tasks::reader`]).
    reader: TurnReader,
}

/// A turn noted as running here.
struct Registered {
    phase: watch::Sender<Phase>,
    /// For the readers that start with the turn.
    reader: TurnReader,
    /// What the turn's end waits on before it compacts its chunks.
    readers: reader::ReadersGone,
}

/// How far a turn running here has got with its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    /// Its final event is being logged: a client following the log may
    /// already read it and answer it, while the record (and this process's
    /// list of running turns) still says that the turn runs.
    Ending,
    /// Its final status could not be saved in the task store for a while
    /// (the store fails or does not answer): the turn goes on trying in the
    /// background, and whoever waits for its end to answer a client answers
    /// with an error instead.
    Unsaved,
    /// Its end is recorded and it no longer runs here.
    Done,
}

/// Waits until the watched turn has recorded its end and left the turns
/// running here.
async fn done(mut phase: watch::Receiver<Phase>) {
    let _ = phase.wait_for(|p| *p == Phase::Done).await;
}

/// Waits until the watched turn has recorded its end, or has failed to
/// for a while ([`Phase::Unsaved`]).
async fn settled(mut phase: watch::Receiver<Phase>) {
    let _ = phase
        .wait_for(|p| matches!(p, Phase::Done | Phase::Unsaved))
        .await;
}

/// The first pause before the end of a turn is saved again after the task
/// store failed; it doubles up to [`END_RETRY_MAX_PAUSE`].
const END_RETRY_FIRST_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause between two tries to save the end of a turn.
const END_RETRY_MAX_PAUSE: Duration = Duration::from_secs(2);
/// How long the end of a turn is tried again while the task store fails,
/// before the turn gives up (and logs an error): its record then keeps
/// the state it had.
const END_RETRY_LIMIT: Duration = Duration::from_secs(300);

/// Why a record was not changed.
enum Unchanged {
    /// The record is gone or at another turn: nothing to do.
    MovedOn,
    /// The task store failed (or did not answer in time).
    Store(looopy_core::store::StoreError),
}

/// The turns of one server.
pub(crate) struct Tasks {
    runner: Arc<dyn TurnRunner>,
    pub(crate) log: Arc<dyn EventLog>,
    pub(crate) store: Arc<dyn TaskRecordStore>,
    running: Mutex<HashMap<String, Running>>,
    tracker: TaskTracker,
    cancel_poll: Duration,
    cancel_wait: Duration,
    /// Whether the server offers the tool-progress extension (a turn logs
    /// its updates only when its request also activated it).
    tool_progress: bool,
    /// The turn registry, when stranded turns are recovered here.
    recovery: Option<Arc<dyn TurnLock>>,
}

/// What the driver of one turn tracks.
struct TurnState {
    task_id: Arc<str>,
    context_id: Arc<str>,
    /// The turn's number in the task ([`TaskRecord::turns`]): the record is
    /// changed for this turn only while it is still at it.
    turn: u32,
    last_state: TaskState,
    ended: bool,
    /// Whether the turn logs tool-progress updates: the request that
    /// started it activated the extension. Other turns never build them.
    progress: bool,
    /// Told to whoever waits for the turn here (a blocking send, a cancel,
    /// the next message of a client that answered its final event).
    phase: watch::Sender<Phase>,
    /// The `artifact-update` events the turn logged, with their ids: kept
    /// as one event per artifact once the turn ends (`compact`).
    chunks: Vec<StoredEvent>,
    /// The log id of the turn's final event, once logged.
    final_event_id: Option<String>,
    /// Resolves once every reader that started with the turn here has
    /// read its end or gone (taken by the compaction at the turn's end).
    readers: Option<reader::ReadersGone>,
}

impl TurnState {
    /// Turn `turn` of a task, not yet ended, logging no progress updates.
    fn new(
        task_id: Arc<str>,
        context_id: Arc<str>,
        turn: u32,
        phase: watch::Sender<Phase>,
        readers: reader::ReadersGone,
    ) -> Self {
        TurnState {
            task_id,
            context_id,
            turn,
            last_state: TaskState::Submitted,
            ended: false,
            progress: false,
            phase,
            chunks: Vec::new(),
            final_event_id: None,
            readers: Some(readers),
        }
    }

    /// The state the record last showed, and whether the turn logs
    /// tool-progress updates.
    fn with_state(mut self, last_state: TaskState, progress: bool) -> Self {
        self.last_state = last_state;
        self.progress = progress;
        self
    }
}

/// Runs `work` (a store call of the reader) while polling the turn's
/// `events`: what the turn produces meanwhile is queued in `ready`, and
/// `more` turns false when the stream ended. A turn that runs on its
/// reader's task is never left unpolled in the middle of a store call of
/// its own while the reader waits for the store.
async fn polling_turn<T>(
    work: impl Future<Output = T>,
    events: &mut TurnEvents,
    ready: &mut VecDeque<AgentEvent>,
    more: &mut bool,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            done = &mut work => return done,
            event = events.next(), if *more => match event {
                Some(event) => ready.push_back(event),
                None => *more = false,
            },
        }
    }
}

/// The span of a turn driven here (`recovered`: taken over from a process
/// that died).
fn turn_span(task_id: &str, context_id: &str, recovered: bool) -> tracing::Span {
    tracing::info_span!(
        "a2a.turn",
        "a2a.task.id" = %task_id,
        "a2a.context.id" = %context_id,
        "a2a.task.state" = tracing::field::Empty,
        "looopy.turn.recovered" = recovered,
    )
}

/// Starts a new turn's events on a record whose task waits for input (the
/// turn's events come after the last one logged; no final event yet).
/// False, changing nothing, when the task no longer waits: another process
/// continued or cancelled it first.
fn reopen_waiting(r: &mut TaskRecord) -> bool {
    if !matches!(
        r.status.state,
        TaskState::InputRequired | TaskState::AuthRequired
    ) {
        return false;
    }
    r.turn_start_event_id.clone_from(&r.last_event_id);
    r.final_event_id = None;
    true
}

fn store_error(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(format!("task store: {e}"))
}

impl Tasks {
    pub(crate) fn new(
        runner: Arc<dyn TurnRunner>,
        log: Arc<dyn EventLog>,
        store: Arc<dyn TaskRecordStore>,
        cancel_poll: Duration,
        cancel_wait: Duration,
        tool_progress: bool,
        recovery: Option<Arc<dyn TurnLock>>,
    ) -> Self {
        Tasks {
            runner,
            log,
            store,
            running: Mutex::default(),
            tracker: TaskTracker::new(),
            cancel_poll,
            cancel_wait,
            tool_progress,
            recovery,
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The record of a task the principal may see.
    pub(crate) async fn owned(
        &self,
        task_id: &str,
        principal: &str,
    ) -> Result<TaskRecord, RpcError> {
        match self.store.get(task_id).await.map_err(store_error)? {
            Some(r) if r.owner.as_deref().is_none_or(|o| o == principal) => Ok(r),
            _ => Err(RpcError::task_not_found(task_id)),
        }
    }

    /// Fails when the context belongs to another principal.
    async fn check_context(&self, context_id: &str, principal: &str) -> Result<(), RpcError> {
        let records = self
            .store
            .list(None, Some(context_id), 1)
            .await
            .map_err(store_error)?;
        match records.first() {
            Some(r) if r.owner.as_deref().is_some_and(|o| o != principal) => Err(RpcError::new(
                a2a::error_code::TASK_NOT_FOUND,
                "Context not found",
            )
            .with_meta("contextId", context_id)),
            _ => Ok(()),
        }
    }

    /// Accepts a message: a new task (in a new or existing context) or the
    /// next turn of a task that waits for input. The turn runs on a task of
    /// its own; its first event (`task`, submitted) is already logged when
    /// this returns. `progress`: the request activated the tool-progress
    /// extension, so the turn logs its updates (when the server offers it).
    pub(crate) async fn start(
        self: &Arc<Self>,
        auth: &AuthContext,
        params: SendParams,
        progress: bool,
    ) -> Result<Started, RpcError> {
        let principal = auth.principal.as_str();
        let wire = params.message;
        let (record, continues) = match &wire.task_id {
            Some(task_id) => {
                // A client may answer the final event of a turn running
                // here before the turn has recorded its end.
                self.wait_if_ending(task_id).await;
                let record = self.owned(task_id, principal).await?;
                if let Some(c) = &wire.context_id
                    && *c != record.context_id
                {
                    return Err(RpcError::invalid_params(
                        "message.contextId: does not match the task's context",
                    )
                    .with_meta("field", "message.contextId"));
                }
                match record.status.state {
                    TaskState::InputRequired | TaskState::AuthRequired => {}
                    s if s.is_terminal() => {
                        return Err(RpcError::unsupported(format!(
                            "the task is {}: it accepts no more messages",
                            s.as_str()
                        )));
                    }
                    s => {
                        return Err(RpcError::unsupported(format!(
                            "the task is {}: send the next message once it waits for input",
                            s.as_str()
                        )));
                    }
                }
                (record, true)
            }
            None => {
                let context_id = match &wire.context_id {
                    Some(c) => {
                        self.check_context(c, principal).await?;
                        c.clone()
                    }
                    None => uuid::Uuid::now_v7().to_string(),
                };
                let task_id = uuid::Uuid::now_v7().to_string();
                let status = TaskStatus::new(TaskState::Submitted);
                (
                    TaskRecord::new(&task_id, &context_id, Some(principal.to_owned()), status),
                    false,
                )
            }
        };
        let task_id = record.task_id.clone();
        let context_id = record.context_id.clone();
        let asked = continues.then(|| record.status.message.clone()).flatten();

        let cancel = CancellationToken::new();
        let Some(registered) = self.register(&task_id, &cancel) else {
            return Err(RpcError::unsupported("the task is already running a turn"));
        };
        let (after, turn) = self
            .log_submission(record, continues, &wire.message)
            .await
            .inspect_err(|_| {
                self.running().remove(&task_id);
            })?;
        let Registered {
            phase,
            reader,
            readers,
        } = registered;
        let started = Started {
            task_id: task_id.clone(),
            after,
            reader,
        };
        let turn = TurnState::new(
            task_id.as_str().into(),
            context_id.as_str().into(),
            turn,
            phase,
            readers,
        )
        .with_state(TaskState::Submitted, self.tool_progress && progress);

        let request = TurnRequest {
            task_id: turn.task_id.clone(),
            context_id: turn.context_id.clone(),
            message: wire.message,
            auth: auth.clone(),
            cancel,
            continues_task: continues,
            asked,
            metadata: params.metadata,
            // Set by `drive`, which knows whether progress is followed.
            tool_progress: false,
        };
        let span = turn_span(&task_id, &context_id, false);
        let this = Arc::clone(self);
        self.tracker
            .spawn(this.drive(request, turn).instrument(span));
        Ok(started)
    }

    /// Notes a turn as running here; `None` when one already is.
    fn register(&self, task_id: &str, cancel: &CancellationToken) -> Option<Registered> {
        let mut running = self.running();
        if running.contains_key(task_id) {
            return None;
        }
        let (phase, watched) = watch::channel(Phase::Running);
        let (reader, readers) = reader::turn_reader();
        running.insert(
            task_id.to_owned(),
            Running {
                cancel: cancel.clone(),
                phase: watched,
                reader: reader.clone(),
            },
        );
        Some(Registered {
            phase,
            reader,
            readers,
        })
    }

    /// For a stream that follows a turn running here: its chunks stay as
    /// they came until the stream has read its end (`None` when no turn of
    /// the task runs here).
    pub(crate) fn reader(&self, task_id: &str) -> Option<TurnReader> {
        self.running().get(task_id).map(|r| r.reader.clone())
    }

    /// Logs the turn's `task` event and records the turn. A new task's
    /// record is written once, after its event, with the event's id (its id
    /// is fresh: nobody else can write it). A task that waits for input is
    /// claimed first, atomically, so that of two processes given its next
    /// message one wins. Returns where the turn's events start (after
    /// which log id) and its number.
    async fn log_submission(
        &self,
        record: TaskRecord,
        continues: bool,
        message: &Message,
    ) -> Result<(Option<String>, u32), RpcError> {
        let task_id = record.task_id.clone();
        let message_id = message.message_id.clone();
        let mut claimed = if continues {
            // A request left over from an earlier turn must not cancel this one.
            let _ = self.store.take_cancel(&task_id).await;
            self.store
                .update(&task_id, &mut |r| {
                    if !reopen_waiting(r) {
                        return false;
                    }
                    r.turns += 1;
                    r.turn_message_ids.push(message_id.clone());
                    r.status = TaskStatus::new(TaskState::Submitted);
                    r.updated_at = Utc::now();
                    true
                })
                .await
                .map_err(store_error)?
                .ok_or_else(|| RpcError::unsupported("the task is already running a turn"))?
        } else {
            let mut r = record;
            r.turns = 1;
            r.turn_message_ids = vec![message_id];
            r
        };
        let turn = claimed.turns;
        let event = AgentEvent::new(
            claimed.task_id.as_str().into(),
            claimed.context_id.as_str().into(),
            EventPayload::Task {
                status: claimed.status.clone(),
                metadata: Map::new(),
            },
        );
        let id = match self.log.append(&task_id, Arc::new(event)).await {
            Ok(id) => id,
            Err(e) => {
                let why = format!("event log: {e}");
                if continues {
                    let status = TaskStatus::new(TaskState::Failed)
                        .with_message(Message::assistant(why.clone()));
                    self.update(&task_id, turn, move |r| r.status = status.clone())
                        .await;
                }
                return Err(RpcError::internal(why));
            }
        };
        if continues {
            self.update(&task_id, turn, move |r| r.last_event_id = Some(id.clone()))
                .await;
        } else {
            claimed.last_event_id = Some(id);
            if !self
                .store
                .compare_and_put(&claimed)
                .await
                .map_err(store_error)?
            {
                return Err(RpcError::internal("task store: the new task id is taken"));
            }
        }
        Ok((claimed.turn_start_event_id, turn))
    }

    /// Runs a turn to its end: every public event goes to the log, state
    /// changes and the end go to the record.
    async fn drive(self: Arc<Self>, mut request: TurnRequest, mut turn: TurnState) {
        let cancel = request.cancel.clone();
        request.tool_progress = turn.progress;
        if turn.progress {
            let (trace_id, generated) = crate::trace::current_trace_id();
            let event = progress::turn_start(
                turn.task_id.clone(),
                turn.context_id.clone(),
                &trace_id,
                generated,
            );
            self.append_progress(&turn, event).await;
        }
        let events = self.runner.run_turn(request).await;
        self.run_to_end(&mut turn, events, &cancel).await;
    }

    /// Drains a turn's events (or records why it could not start), makes
    /// sure it ends with a final status, and marks it done here.
    async fn run_to_end(
        &self,
        turn: &mut TurnState,
        events: Result<TurnEvents, RunnerError>,
        cancel: &CancellationToken,
    ) {
        match events {
            Err(e) => self.fail(turn, &e.message).await,
            Ok(events) => self.drain(turn, events, cancel).await,
        }
        if !turn.ended && !self.handed_over(turn).await {
            self.fail(turn, "the turn ended without a final status")
                .await;
        }
        self.running().remove(&*turn.task_id);
        turn.phase.send_replace(Phase::Done);
        // After the end is recorded: nobody waits on this.
        self.compact_chunks(turn).await;
    }

    /// Whether a turn whose events stopped before its end was handed over
    /// to another process: its lease, still the turn's, now has another
    /// owner (this process stalled past the lease and the turn was
    /// recovered elsewhere). The new owner writes its end; writing one here
    /// would end every reader's stream early.
    async fn handed_over(&self, turn: &TurnState) -> bool {
        let Some(lock) = &self.recovery else {
            return false;
        };
        match lock.lease(&turn.context_id).await {
            Ok(Some(lease)) if lease.task_id.as_deref() == Some(&*turn.task_id) => {
                tracing::warn!(task_id = %turn.task_id, "the turn was handed over to another process; it writes the end");
                true
            }
            Ok(_) => false,
            Err(error) => {
                tracing::warn!(task_id = %turn.task_id, %error, "could not read the turn lease");
                false
            }
        }
    }

    /// Reads the turn's events and logs them in order. The turn runs on
    /// this task (a turn runs on the task that reads it), so
    /// while an event is being logged or the cancel flag is read (a round
    /// trip on Redis) the turn is still polled and what it produces
    /// meanwhile waits in `ready`: the store calls made here never hold the
    /// turn up. Nor can they wait on it: the turn may be in the middle of a
    /// store call of its own (a lease renewal, a checkpoint) that holds
    /// something this call needs (SQLite's write turn within the process),
    /// and that call only finishes while the turn is polled.
    async fn drain(
        &self,
        turn: &mut TurnState,
        mut events: TurnEvents,
        cancel: &CancellationToken,
    ) {
        // The first check comes one period in. (Awaiting an interval's first,
        // "immediate" tick would hold the turn's first event: tokio rounds a
        // deadline up to its next millisecond, so it waits for the timer
        // wheel, about a millisecond on an idle server.)
        let start = tokio::time::Instant::now() + self.cancel_poll;
        let mut poll = tokio::time::interval_at(start, self.cancel_poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ready = VecDeque::new();
        let mut more = true;
        loop {
            let event = match ready.pop_front() {
                Some(event) => event,
                None if !more => return,
                None => tokio::select! {
                    event = events.next() => match event {
                        None => return,
                        Some(event) => event,
                    },
                    _ = poll.tick(), if !cancel.is_cancelled() => {
                        polling_turn(
                            self.check_cancel(turn, cancel),
                            &mut events,
                            &mut ready,
                            &mut more,
                        )
                        .await;
                        continue;
                    }
                },
            };
            polling_turn(
                self.on_event(turn, event),
                &mut events,
                &mut ready,
                &mut more,
            )
            .await;
            if turn.ended {
                return;
            }
        }
    }

    /// Cancels the turn when a cancel was requested through the task
    /// store (by another process).
    async fn check_cancel(&self, turn: &TurnState, cancel: &CancellationToken) {
        match self.store.take_cancel(&turn.task_id).await {
            Ok(true) => {
                tracing::info!("cancel requested through the task store");
                cancel.cancel();
            }
            Ok(false) => {}
            Err(error) => tracing::debug!(%error, "could not check the cancel flag"),
        }
    }

    async fn on_event(&self, turn: &mut TurnState, mut event: AgentEvent) {
        if event.is_internal() {
            // Only the tool-progress extension's share of them is logged,
            // and only for a turn whose request asked for it.
            if turn.progress
                && let Some(update) = progress::from_internal(&event)
            {
                self.append_progress(turn, update).await;
            }
            return;
        }
        // The server logged the turn's `task` event itself.
        if matches!(*event.payload, EventPayload::Task { .. }) {
            return;
        }
        // The runner gave the event its ids (see `TurnEvents`); only one
        // that got them wrong is corrected.
        if event.task_id != turn.task_id || event.context_id != turn.context_id {
            tracing::warn!(
                task_id = %event.task_id,
                context_id = %event.context_id,
                "a runner's event carries another task's ids; logged under the turn's"
            );
            event.task_id = turn.task_id.clone();
            event.context_id = turn.context_id.clone();
        }
        if event.is_final() {
            turn.phase.send_replace(Phase::Ending);
        }
        let event = Arc::new(event);
        let id = match self.log.append(&turn.task_id, Arc::clone(&event)).await {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::warn!(error = %e, kind = event.kind(), "could not log an event");
                None
            }
        };
        // Artifacts are kept by the runner (or read back from the log);
        // only status changes go to the record.
        match &*event.payload {
            EventPayload::ArtifactUpdate { .. } => {
                if let Some(id) = id {
                    turn.chunks.push(StoredEvent { id, event });
                }
            }
            EventPayload::StatusUpdate {
                status, is_final, ..
            } => {
                tracing::Span::current().record("a2a.task.state", status.state.as_str());
                if *is_final {
                    self.record_end(turn, status.clone(), id).await;
                } else if status.state != turn.last_state {
                    turn.last_state = status.state;
                    let status = status.clone();
                    self.update(&turn.task_id, turn.turn, move |r| {
                        r.status = status.clone();
                        if id.is_some() {
                            r.last_event_id.clone_from(&id);
                        }
                    })
                    .await;
                }
            }
            _ => {}
        }
    }

    /// Logs a tool-progress update (it changes nothing in the record).
    async fn append_progress(&self, turn: &TurnState, mut update: AgentEvent) {
        update.task_id = turn.task_id.clone();
        update.context_id = turn.context_id.clone();
        if let Err(e) = self.log.append(&turn.task_id, Arc::new(update)).await {
            tracing::warn!(error = %e, "could not log a tool progress update");
        }
    }

    /// Logs a `failed` final status.
    async fn fail(&self, turn: &mut TurnState, why: &str) {
        tracing::warn!(task_id = %turn.task_id, why, "turn failed");
        let status = TaskStatus::new(TaskState::Failed).with_message(Message::assistant(why));
        let event = AgentEvent::new(
            turn.task_id.clone(),
            turn.context_id.clone(),
            EventPayload::StatusUpdate {
                status,
                is_final: true,
                metadata: looopy_core::StatusMetadata::default(),
            },
        );
        self.on_event(turn, event).await;
    }

    /// Records the end of a turn and lowers a cancel request it did not
    /// take.
    async fn record_end(&self, turn: &mut TurnState, status: TaskStatus, id: Option<String>) {
        turn.ended = true;
        turn.final_event_id.clone_from(&id);
        self.save_end(turn, move |r| {
            r.status = status.clone();
            r.final_event_id.clone_from(&id);
            if id.is_some() {
                r.last_event_id.clone_from(&id);
            }
        })
        .await;
        if let Err(error) = self.store.take_cancel(&turn.task_id).await {
            tracing::debug!(%error, "could not lower the cancel flag");
        }
    }

    /// Saves the end of a turn in its record. Unlike the turn's other
    /// changes of the record this is not best effort: the record is the
    /// only place that says a turn ended, so while the task store fails
    /// the change is tried again (pauses doubling up to
    /// [`END_RETRY_MAX_PAUSE`], for at most [`END_RETRY_LIMIT`]). Once that
    /// has taken the cancel wait, the turn tells its waiters
    /// ([`Phase::Unsaved`]), which answer their clients with an error
    /// rather than with a state the turn has left.
    async fn save_end(&self, turn: &TurnState, mut change: impl FnMut(&mut TaskRecord) + Send) {
        let task_id = &*turn.task_id;
        let started = tokio::time::Instant::now();
        let mut pause = END_RETRY_FIRST_PAUSE;
        let mut tries = 0u32;
        loop {
            tries += 1;
            let error = match self.try_update(task_id, turn.turn, &mut change).await {
                Ok(()) => {
                    if tries > 1 {
                        tracing::info!(task_id, tries, "the end of the turn is saved");
                    }
                    return;
                }
                Err(Unchanged::MovedOn) => {
                    tracing::warn!(
                        task_id,
                        turn = turn.turn,
                        "the task record disappeared or moved on"
                    );
                    return;
                }
                Err(Unchanged::Store(error)) => error,
            };
            let waited = started.elapsed();
            if waited >= END_RETRY_LIMIT {
                tracing::error!(task_id, tries, %error, "could not save the end of the turn: the task record keeps its earlier state");
                return;
            }
            if waited >= self.cancel_wait && *turn.phase.borrow() != Phase::Unsaved {
                tracing::warn!(task_id, %error, "the end of the turn is not saved yet: waiting clients get an error; trying again");
                turn.phase.send_replace(Phase::Unsaved);
            } else {
                tracing::debug!(task_id, %error, "could not save the end of the turn; trying again");
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(END_RETRY_MAX_PAUSE);
        }
    }

    /// Changes a record atomically, while it is still at turn `turn` (a
    /// later turn, or a cancel of a waiting task, is left alone); sets
    /// `updated_at`. Best effort: failures are logged.
    async fn update(
        &self,
        task_id: &str,
        turn: u32,
        mut change: impl FnMut(&mut TaskRecord) + Send,
    ) {
        match self.try_update(task_id, turn, &mut change).await {
            Ok(()) => {}
            Err(Unchanged::MovedOn) => {
                tracing::warn!(task_id, turn, "the task record disappeared or moved on");
            }
            Err(Unchanged::Store(e)) => {
                tracing::warn!(task_id, error = %e, "could not save the task record");
            }
        }
    }

    /// [`update`](Self::update), saying why nothing changed.
    async fn try_update(
        &self,
        task_id: &str,
        turn: u32,
        change: &mut (impl FnMut(&mut TaskRecord) + Send),
    ) -> Result<(), Unchanged> {
        let result = self
            .store
            .update(task_id, &mut |r| {
                if r.turns != turn {
                    return false;
                }
                change(r);
                r.updated_at = Utc::now();
                true
            })
            .await;
        match result {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(Unchanged::MovedOn),
            Err(e) => Err(Unchanged::Store(e)),
        }
    }

    /// The phase of the turn running here (`None` when none runs here).
    fn phase(&self, task_id: &str) -> Option<watch::Receiver<Phase>> {
        self.running().get(task_id).map(|r| r.phase.clone())
    }

    /// Waits until the turn running here has recorded its end, or could
    /// not for a while because the task store fails ([`Phase::Unsaved`]);
    /// at once when none runs here.
    pub(crate) async fn wait_local(&self, task_id: &str) {
        if let Some(phase) = self.phase(task_id) {
            settled(phase).await;
        }
    }

    /// Waits (at most the cancel wait) for a turn running here that has
    /// logged its final event to record its end: one write to the task
    /// store. A turn still running is not waited for.
    async fn wait_if_ending(&self, task_id: &str) {
        if let Some(phase) = self.phase(task_id)
            && *phase.borrow() == Phase::Ending
        {
            let _ = tokio::time::timeout(self.cancel_wait, done(phase)).await;
        }
    }

    /// Cancels every turn running here and waits for them to record their end
    /// (at most `grace`).
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_ok()
        {
            return;
        }
        let tokens: Vec<CancellationToken> =
            self.running().values().map(|r| r.cancel.clone()).collect();
        tracing::info!(turns = tokens.len(), "cancelling the turns still running");
        for t in tokens {
            t.cancel();
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.tracker.wait()).await;
    }
}
