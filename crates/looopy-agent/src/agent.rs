//! [`Agent`]: one conversation's lifecycle and persistence.
//!
//! ```text
//! created --start()--> starting --> ready --execute_turn()--> busy --turn ends--> ready
//!                          |          |  \--pause()--> paused --start()/execute_turn()--> starting
//!                          v          \----shutdown()--> shutdown --start()--> starting
//!                        failed --start()/execute_turn()--> starting
//! ```
//!
//! Every operation that changes the conversation (a turn, start, pause,
//! shutdown, save_state, clear, compact) holds the Agent exclusively: one
//! started while another runs fails at once with [`AgentError::Busy`]; it
//! never waits and never runs beside it.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::Utc;
use looopy_core::store::{
    Acquire, AgentState, ArtifactStore, CheckpointStore, HistoryMark, LifecycleState,
    StoredArtifact,
};
use looopy_core::{History, Message, StoreError, TurnContext};
use looopy_loop::AgentLoop;
use serde_json::{Map, Value};
use tokio::sync::OwnedMutexGuard;
use tracing::Instrument;

use crate::compaction::{self, CompactionReport};
use crate::config::{MAX_COMPACTION_RECORDS, keys};
use crate::error::{AgentBusy, AgentError, BusyHolder};
use crate::lease::{Lease, renewed};
use crate::parts::Parts;
use crate::size_warning::SizeWarnings;
use crate::telemetry;
use looopy_core::record::{ExecutionRecord, RecordHeader, Recorder};

/// A stateful, multi-turn agent for one conversation.
///
/// Cheap to clone: clones are the same agent (same lifecycle, same busy
/// check). See the [crate docs](crate) for an example.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) context_id: Arc<str>,
    /// The loop, the stores and the settings: one allocation shared by
    /// every Agent of a template, so that making an Agent for a new
    /// conversation copies none of them.
    pub(crate) shared: Arc<Parts>,
    /// Who owns the conversation (recorded in its state).
    pub(crate) owner: Option<String>,
    /// History size limits already warned about (compaction off).
    pub(crate) size_warnings: SizeWarnings,
    exclusive: Arc<tokio::sync::Mutex<()>>,
    status: Mutex<Status>,
}

/// What the Agent knows between operations.
pub(crate) struct Status {
    /// Shared with the save in flight, so that saving copies nothing here;
    /// written through [`Status::state_mut`].
    pub(crate) state: Arc<AgentState>,
    /// Messages not in the store yet (auto-save off, or a failed save),
    /// oldest first; they follow the stored history.
    pub(crate) unsaved: Vec<Message>,
    pub(crate) last_error: Option<String>,
    /// The stored history as the last turn left it, so that the next turn
    /// reads only what others appended since (kept with a turn lock only:
    /// the lease is what keeps others from writing during a turn).
    pub(crate) held: Option<HeldHistory>,
}

/// A stored history this process holds, and the store's mark of it.
#[derive(Clone)]
pub(crate) struct HeldHistory {
    pub(crate) mark: HistoryMark,
    pub(crate) history: History,
}

impl Status {
    /// The state, to change (copied first only when a save still holds it).
    pub(crate) fn state_mut(&mut self) -> &mut AgentState {
        Arc::make_mut(&mut self.state)
    }
}

fn fresh_state(context_id: &str, agent_id: &str, owner: Option<String>) -> AgentState {
    let now = Utc::now();
    AgentState {
        context_id: context_id.to_owned(),
        agent_id: agent_id.to_owned(),
        lifecycle: LifecycleState::Created,
        turn_count: 0,
        created_at: now,
        last_activity: now,
        owner,
        last_turn: None,
        metadata: Map::new(),
    }
}

impl Agent {
    /// The Agent of `context_id`, owned by `owner` (when given) or by the
    /// settings' owner.
    pub(crate) fn from_parts(
        context_id: Arc<str>,
        shared: Arc<Parts>,
        owner: Option<String>,
    ) -> Self {
        let owner = owner.or_else(|| shared.settings.owner.clone());
        let state = fresh_state(
            &context_id,
            &shared.agent_loop.config().agent_id,
            owner.clone(),
        );
        Agent {
            inner: Arc::new(Inner {
                context_id,
                shared,
                owner,
                size_warnings: SizeWarnings::default(),
                exclusive: Arc::new(tokio::sync::Mutex::new(())),
                status: Mutex::new(Status {
                    state: Arc::new(state),
                    unsaved: Vec::new(),
                    last_error: None,
                    held: None,
                }),
            }),
        }
    }

    /// The execution record of the latest turn of `task_id` (what it sent
    /// to the model and got back, the tool calls, retries, compaction,
    /// recovery, with timestamps and durations), while the turn runs or
    /// after it ended; `None` when the agent records no turns, the task is
    /// not of this conversation, or the record aged out. A task that ran
    /// several turns (a message after `input-required`) has a record per
    /// turn: [`task_records`](Self::task_records).
    pub async fn record(&self, task_id: &str) -> Result<Option<ExecutionRecord>, AgentError> {
        let Some(store) = &self.inner.shared.records else {
            return Ok(None);
        };
        Ok(store
            .get(task_id)
            .await?
            .filter(|r| r.context_id == *self.inner.context_id))
    }

    /// The execution records of every turn of `task_id`, the oldest
    /// first; empty when the agent records no turns or the task is not of
    /// this conversation.
    pub async fn task_records(&self, task_id: &str) -> Result<Vec<ExecutionRecord>, AgentError> {
        let Some(store) = &self.inner.shared.records else {
            return Ok(Vec::new());
        };
        let mut records = store.list_task(task_id).await?;
        records.retain(|r| r.context_id == *self.inner.context_id);
        Ok(records)
    }

    /// The execution records of this conversation's turns, the most
    /// recent first, at most `limit`.
    pub async fn records(&self, limit: usize) -> Result<Vec<ExecutionRecord>, AgentError> {
        let Some(store) = &self.inner.shared.records else {
            return Ok(Vec::new());
        };
        Ok(store.list(&self.inner.context_id, limit).await?)
    }

    /// A recorder for a turn of `cx`, when the agent records turns.
    pub(crate) fn recorder(&self, cx: &TurnContext, resumed: bool) -> Option<Recorder> {
        let store = self.inner.shared.records.as_ref()?;
        let header = RecordHeader {
            task_id: cx.task_id.to_string(),
            context_id: cx.context_id.to_string(),
            agent_id: cx.agent_id.to_string(),
            principal: cx.auth.as_ref().map(|a| a.principal.clone()),
            turn_number: cx.turn_number,
        };
        let policy = self.inner.shared.record_policy.clone();
        Some(Recorder::new(store.clone(), policy, header, resumed))
    }

    /// The conversation this agent serves.
    pub fn context_id(&self) -> &str {
        &self.inner.context_id
    }

    /// The loop that runs the turns.
    pub fn agent_loop(&self) -> &AgentLoop {
        &self.inner.shared.agent_loop
    }

    /// Where the agent is in its lifecycle.
    pub fn lifecycle(&self) -> LifecycleState {
        self.status().state.lifecycle
    }

    /// A snapshot of the agent's state (turn count, last activity, metadata).
    pub fn state(&self) -> AgentState {
        AgentState::clone(&self.status().state)
    }

    /// Turns run so far in this conversation (loaded from the state store
    /// on start).
    pub fn turn_count(&self) -> u64 {
        self.status().state.turn_count
    }

    /// Why the last start failed, when the lifecycle is `failed`.
    pub fn last_error(&self) -> Option<String> {
        self.status().last_error.clone()
    }

    /// Messages kept in memory, not yet in the store.
    pub fn unsaved_count(&self) -> usize {
        self.status().unsaved.len()
    }

    pub(crate) fn status(&self) -> MutexGuard<'_, Status> {
        self.inner
            .status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_lifecycle(&self, lifecycle: LifecycleState) {
        let mut status = self.status();
        let state = status.state_mut();
        state.lifecycle = lifecycle;
        state.last_activity = Utc::now();
    }

    /// Holds the agent exclusively, or says it is busy.
    pub(crate) fn claim(&self) -> Result<OwnedMutexGuard<()>, AgentError> {
        self.inner
            .exclusive
            .clone()
            .try_lock_owned()
            .map_err(|_| AgentError::busy(&self.inner.context_id, BusyHolder::ThisAgent))
    }

    /// Takes the turn lease when a lock is configured, for the turn of
    /// `task_id` when given (a turn's lease is recovered by another process
    /// if this one dies; one without a task just runs out).
    pub(crate) async fn lease(&self, task_id: Option<&str>) -> Result<Option<Lease>, AgentError> {
        let Some(lock) = &self.inner.shared.turn_lock else {
            return Ok(None);
        };
        let context_id = &self.inner.context_id;
        let found = Lease::acquire(
            lock.clone(),
            context_id.clone(),
            task_id,
            self.inner.shared.settings.lock_ttl,
        )
        .await?;
        match found {
            Ok(lease) => Ok(Some(lease)),
            Err(Acquire::Stranded { task_id }) => Err(AgentError::Busy(AgentBusy {
                context_id: context_id.to_string(),
                holder: BusyHolder::StrandedTurn,
                task_id: Some(task_id),
            })),
            Err(_) => Err(AgentError::busy(context_id, BusyHolder::OtherOwner)),
        }
    }

    /// Loads (or reloads) the state and checks that the message store
    /// answers: `starting`, then `ready` or `failed`.
    async fn load(&self) -> Result<(), AgentError> {
        let span = telemetry::initialize_span(&self.inner.context_id);
        let loaded = self.load_in_span().instrument(span.clone()).await;
        if let Err(error) = &loaded {
            telemetry::record_error(&span, error);
        }
        loaded
    }

    /// [`load`](Self::load), in its span.
    async fn load_in_span(&self) -> Result<(), AgentError> {
        self.set_lifecycle(LifecycleState::Starting);
        let loaded = async {
            let state = match &self.inner.shared.states {
                Some(states) => states.load(&self.inner.context_id).await?,
                None => None,
            };
            self.inner
                .shared
                .messages
                .count(&self.inner.context_id)
                .await?;
            Ok::<_, StoreError>(state)
        };
        // The tools start beside the load. One that does not start fails
        // no turn: it is logged here and tries again on its next use.
        let (loaded, tools) = futures::join!(loaded, self.inner.shared.agent_loop.start_tools());
        tracing::Span::current().record("looopy.agent.tools_started", tools.is_ok());
        if let Err(error) = tools {
            tracing::warn!(context_id = %self.inner.context_id, %error, "a tool provider did not start; it tries again on its next use");
        }
        match loaded {
            Ok(stored) => {
                tracing::Span::current().record("looopy.agent.state_loaded", stored.is_some());
                // A stored state is written back only when this start
                // changed what it holds (its owner filled in): another
                // process may end a turn between this load and a write, and
                // writing the loaded copy back would undo that turn's count.
                let changed = {
                    let mut status = self.status();
                    let changed = match stored {
                        Some(mut stored) => {
                            let fill_owner = stored.owner.is_none() && self.inner.owner.is_some();
                            if fill_owner {
                                stored.owner = self.inner.owner.clone();
                            }
                            status.state = Arc::new(stored);
                            fill_owner
                        }
                        None => true,
                    };
                    let state = status.state_mut();
                    state.lifecycle = LifecycleState::Ready;
                    state.last_activity = Utc::now();
                    status.last_error = None;
                    changed
                };
                if self.inner.shared.settings.auto_save
                    && changed
                    && let Err(e) = self.persist_state().await
                {
                    tracing::warn!(context_id = %self.inner.context_id, error = %e, "could not save the agent state on start");
                }
                Ok(())
            }
            Err(e) => {
                let mut status = self.status();
                status.state_mut().lifecycle = LifecycleState::Failed;
                status.last_error = Some(e.to_string());
                Err(e.into())
            }
        }
    }

    /// Makes sure the agent is `ready`, loading when needed. A shut-down
    /// agent is refused unless `restart` is set.
    pub(crate) async fn ensure_ready(&self, restart: bool) -> Result<(), AgentError> {
        match self.lifecycle() {
            LifecycleState::Ready => Ok(()),
            LifecycleState::Shutdown if !restart => Err(AgentError::ShutDown {
                context_id: self.inner.context_id.to_string(),
            }),
            _ => self.load().await,
        }
    }

    /// Refreshes the turn count and metadata from the state store, for
    /// when other processes take turns in this conversation too.
    pub(crate) async fn refresh_shared_state(&self) -> Result<(), StoreError> {
        let Some(states) = &self.inner.shared.states else {
            return Ok(());
        };
        if let Some(stored) = states.load(&self.inner.context_id).await? {
            self.apply_shared_state(stored);
        }
        Ok(())
    }

    /// Takes the turn count and metadata of a stored state (another process
    /// may have run turns since this one last did).
    pub(crate) fn apply_shared_state(&self, stored: AgentState) {
        let mut status = self.status();
        let state = status.state_mut();
        state.turn_count = stored.turn_count.max(state.turn_count);
        state.metadata = stored.metadata;
    }

    /// Whether this Agent's checkpoints may build on the stored history
    /// (`TurnInput::stored_history`): the loop's checkpoint store is the
    /// turn store's own (same allocation), which keeps it beside the
    /// message store the history's mark comes from.
    pub(crate) fn checkpoints_beside_history(&self) -> bool {
        let inner = &self.inner;
        match (
            inner.shared.turns.checkpoints(),
            inner.shared.agent_loop.checkpoint_store(),
        ) {
            (Some(of_turns), Some(of_loop)) => {
                std::ptr::addr_eq(of_turns as *const dyn CheckpointStore, Arc::as_ptr(of_loop))
            }
            _ => false,
        }
    }

    /// Whether the turn store saves this Agent's artifacts with a turn's
    /// end: it takes artifacts into that store, the very one this Agent
    /// writes (same allocation), and turns are saved at all.
    pub(crate) fn turn_store_saves_artifacts(&self) -> bool {
        let inner = &self.inner;
        inner.shared.settings.auto_save
            && inner.shared.turns.artifacts().is_some_and(|store| {
                std::ptr::addr_eq(
                    store as *const dyn ArtifactStore,
                    Arc::as_ptr(&inner.shared.artifacts),
                )
            })
    }

    /// Writes the state, when a state store is configured.
    pub(crate) async fn persist_state(&self) -> Result<(), StoreError> {
        let Some(states) = &self.inner.shared.states else {
            return Ok(());
        };
        let snapshot = Arc::clone(&self.status().state);
        states.save_shared(&snapshot).await
    }

    /// Writes the unsaved messages; on failure they stay unsaved.
    pub(crate) async fn flush_unsaved(&self) -> Result<(), StoreError> {
        let batch = std::mem::take(&mut self.status().unsaved);
        if batch.is_empty() {
            return Ok(());
        }
        match self
            .inner
            .shared
            .messages
            .append(&self.inner.context_id, &batch)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) => {
                let mut status = self.status();
                let newer = std::mem::replace(&mut status.unsaved, batch);
                status.unsaved.extend(newer);
                Err(e)
            }
        }
    }

    pub(crate) fn record_compaction(&self, report: &CompactionReport) {
        let mut status = self.status();
        let metadata = &mut status.state_mut().metadata;
        let count = metadata
            .get(keys::COMPACTION_COUNT)
            .and_then(Value::as_u64)
            .unwrap_or(0);
        metadata.insert(keys::COMPACTION_COUNT.into(), Value::from(count + 1));
        let records = metadata
            .entry(keys::COMPACTIONS)
            .or_insert_with(|| Value::Array(Vec::new()));
        if !records.is_array() {
            *records = Value::Array(Vec::new());
        }
        if let Value::Array(list) = records {
            list.push(report.to_json());
            let excess = list.len().saturating_sub(MAX_COMPACTION_RECORDS);
            list.drain(..excess);
        }
    }

    /// Loads the state and gets ready for turns. Also
    /// what brings a paused, shut-down or failed agent back. Turns call it
    /// on their own when needed.
    pub async fn start(&self) -> Result<(), AgentError> {
        let _guard = self.claim()?;
        self.ensure_ready(true).await
    }

    /// Saves everything and marks the agent `paused`. A new Agent for the
    /// same context (in this process or another) continues from there; so
    /// does this one on its next `start` or turn.
    pub async fn pause(&self) -> Result<(), AgentError> {
        self.stop(LifecycleState::Paused).await
    }

    /// Saves everything, marks the agent `shutdown` (turns are refused
    /// until [`start`](Self::start) is called again) and shuts its tool
    /// providers down ([`AgentLoop::shutdown_tools`]: MCP servers' child
    /// processes end; they start again on their next use). Fails with
    /// [`AgentError::Busy`] while a turn runs, changing nothing.
    pub async fn shutdown(&self) -> Result<(), AgentError> {
        self.stop(LifecycleState::Shutdown).await?;
        self.inner
            .shared
            .agent_loop
            .shutdown_tools()
            .await
            .map_err(AgentError::Tools)
    }

    async fn stop(&self, to: LifecycleState) -> Result<(), AgentError> {
        let _guard = self.claim()?;
        match self.lifecycle() {
            // Nothing loaded: nothing to save (saving would overwrite the
            // stored state with an empty one).
            LifecycleState::Created | LifecycleState::Failed | LifecycleState::Starting => {
                self.set_lifecycle(to);
                return Ok(());
            }
            LifecycleState::Shutdown if to == LifecycleState::Shutdown => return Ok(()),
            _ => {}
        }
        self.flush_unsaved().await?;
        let before = self.lifecycle();
        self.set_lifecycle(to);
        if let Err(e) = self.persist_state().await {
            self.set_lifecycle(before);
            return Err(e.into());
        }
        Ok(())
    }

    /// Writes unsaved messages and the state now (for `auto_save(false)`,
    /// or to retry after a failed save). Does nothing before the agent was
    /// started.
    pub async fn save_state(&self) -> Result<(), AgentError> {
        let _guard = self.claim()?;
        if matches!(
            self.lifecycle(),
            LifecycleState::Created | LifecycleState::Failed | LifecycleState::Starting
        ) {
            return Ok(());
        }
        self.flush_unsaved().await?;
        self.persist_state().await?;
        Ok(())
    }

    /// Deletes the conversation's history and artifacts. The turn count
    /// stays (it counts turns ever run); compaction records go.
    pub async fn clear(&self) -> Result<(), AgentError> {
        let _guard = self.claim()?;
        self.ensure_ready(false).await?;
        let lease = self.lease(None).await?;
        let result = renewed(lease.as_ref(), async {
            self.inner
                .shared
                .messages
                .clear(&self.inner.context_id)
                .await?;
            self.inner
                .shared
                .artifacts
                .clear(&self.inner.context_id)
                .await?;
            {
                let mut status = self.status();
                status.unsaved.clear();
                status.held = None;
                let state = status.state_mut();
                for key in [keys::COMPACTIONS, keys::COMPACTION_COUNT] {
                    state.metadata.remove(key);
                }
                state.last_turn = None;
                state.last_activity = Utc::now();
            }
            self.persist_state().await
        })
        .await;
        if let Some(lease) = lease {
            lease.release().await;
        }
        result.map_err(AgentError::from)
    }

    /// Compacts the history now, whatever the limits say (the configured
    /// `keep_recent` and instructions apply). `Ok(None)` when there was
    /// nothing worth compacting.
    pub async fn compact(&self) -> Result<Option<CompactionReport>, AgentError> {
        let _guard = self.claim()?;
        self.ensure_ready(false).await?;
        let lease = self.lease(None).await?;
        // Losing the lease to another owner stops the compaction.
        let cancel = lease.as_ref().map(Lease::lost).unwrap_or_default();
        let result = renewed(lease.as_ref(), async {
            self.flush_unsaved().await?;
            let history = self
                .inner
                .shared
                .messages
                .load(&self.inner.context_id)
                .await?;
            let cx = TurnContext::new(
                format!("compaction-{}", uuid::Uuid::new_v4()),
                self.inner.context_id.clone(),
            )
            .with_cancel(cancel);
            let done = compaction::compact(
                self.inner.shared.summarizer.as_ref(),
                self.inner.shared.messages.as_ref(),
                &self.inner.context_id,
                &history,
                history.len(),
                &self.inner.shared.settings.compaction,
                &cx,
            )
            .await?;
            let Some(done) = done else { return Ok(None) };
            self.record_compaction(&done.report);
            self.persist_state().await?;
            Ok(Some(done.report))
        })
        .await;
        if let Some(lease) = lease {
            lease.release().await;
        }
        result
    }

    /// The whole conversation, oldest first (stored messages, then any
    /// unsaved ones).
    pub async fn messages(&self) -> Result<Vec<Message>, AgentError> {
        self.messages_in(0..usize::MAX).await
    }

    /// Messages `range` of the conversation (clamped), oldest first.
    pub async fn messages_in(&self, range: Range<usize>) -> Result<Vec<Message>, AgentError> {
        let unsaved = self.status().unsaved.clone();
        let stored = self
            .inner
            .shared
            .messages
            .count(&self.inner.context_id)
            .await?;
        let total = stored + unsaved.len();
        let end = range.end.min(total);
        let start = range.start.min(end);
        let mut out = if start < stored {
            self.inner
                .shared
                .messages
                .load_range(&self.inner.context_id, start..end.min(stored))
                .await?
        } else {
            Vec::new()
        };
        let from = start.saturating_sub(stored);
        let to = end.saturating_sub(stored);
        out.extend(unsaved[from..to].iter().cloned());
        Ok(out)
    }

    /// The `limit` most recent messages, oldest first.
    pub async fn last_messages(&self, limit: usize) -> Result<Vec<Message>, AgentError> {
        let stored = self
            .inner
            .shared
            .messages
            .count(&self.inner.context_id)
            .await?;
        let total = stored + self.status().unsaved.len();
        self.messages_in(total.saturating_sub(limit)..total).await
    }

    /// The tool calls waiting for a person's approval: those the last turn
    /// asked about (it ended `input-required`) and no message has answered
    /// yet. What a server shows again when an answer could not be read.
    pub async fn pending_approvals(
        &self,
    ) -> Result<Vec<looopy_core::approval::ApprovalRequest>, AgentError> {
        let stored = self
            .inner
            .shared
            .messages
            .load(&self.inner.context_id)
            .await?;
        let unsaved = self.status().unsaved.clone();
        let history: History = stored.into_iter().chain(unsaved).collect();
        Ok(crate::client::pending_approvals(&history))
    }

    /// The conversation's artifacts, oldest first.
    pub async fn artifacts(&self) -> Result<Vec<StoredArtifact>, AgentError> {
        Ok(self
            .inner
            .shared
            .artifacts
            .list(&self.inner.context_id)
            .await?)
    }

    /// One artifact.
    pub async fn artifact(&self, artifact_id: &str) -> Result<Option<StoredArtifact>, AgentError> {
        Ok(self
            .inner
            .shared
            .artifacts
            .get(&self.inner.context_id, artifact_id)
            .await?)
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.status();
        f.debug_struct("Agent")
            .field("context_id", &self.inner.context_id)
            .field("lifecycle", &status.state.lifecycle)
            .field("turn_count", &status.state.turn_count)
            .field("unsaved", &status.unsaved.len())
            .finish_non_exhaustive()
    }
}
