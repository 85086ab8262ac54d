//! The future that runs one turn to its end (polled by its `AgentTurn`,
//! see `turn`) and saves what it produced, and what it says of the end
//! ([`FinishedTurn`]).
//!
//! Order of work: compaction (when due) -> window -> loop (or the loop's
//! resume from a checkpoint), forwarding events and writing artifacts ->
//! close tool calls left open -> save messages and state -> release the
//! lease and the agent -> forward the final event. A turn whose lease is
//! taken over by another process stops at once and writes nothing more.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::Utc;
use futures::{FutureExt, StreamExt};
use looopy_core::store::{HistoryMark, LastTurn, LifecycleState};
use looopy_core::{
    AgentEvent, AgentTurnReport, EventPayload, History, Message, StatusMetadata, TaskState,
    TaskStatus, ToolCall, ToolResult, TurnContext, TurnError, TurnReport, Usage, WhenCancelled,
};
use looopy_loop::{InternalEvents, TurnEnd, TurnStream};
use tokio::sync::OwnedMutexGuard;

use crate::agent::Agent;
use crate::artifacts::ArtifactRecorder;
use crate::client;
use crate::commit;
use crate::compaction::{self, CompactionReport};
use crate::lease::{Lease, renewing};
use crate::pause::PauseRelay;
use crate::window;

/// How a turn ended, once it has.
#[derive(Debug, Clone)]
pub struct FinishedTurn {
    /// The turn's task id.
    pub task_id: String,
    /// 1-based number of the turn in the conversation.
    pub turn_number: u64,
    /// Why it ended (model finished, max iterations, input required,
    /// cancelled, error...).
    pub end: TurnEnd,
    /// The task state it ended in.
    pub state: TaskState,
    /// The final message (answer, error text, pending client calls),
    /// shared with the history and the final event.
    pub message: Option<Arc<Message>>,
    /// Tokens used.
    pub usage: Usage,
    /// Loop iterations run.
    pub iterations: u32,
    /// What the turn added to the conversation: client tool results, the
    /// user message, then everything the loop produced (the produced
    /// messages are shared with the turn's history, not copied).
    pub new_messages: Vec<Arc<Message>>,
    /// Client tool calls waiting for results (`input-required`).
    pub pending_tool_calls: Vec<ToolCall>,
    /// Whether the messages and state reached the stores (false with
    /// auto-save off, or when a save failed: see `save_error`).
    pub saved: bool,
    /// Why saving failed; the messages stay in memory and are written by
    /// the next turn or [`Agent::save_state`](crate::Agent::save_state).
    pub save_error: Option<String>,
    /// A compaction made before the turn.
    pub compaction: Option<CompactionReport>,
    /// Artifacts written by the turn.
    pub artifact_ids: Vec<String>,
}

/// The history a turn starts from.
pub(crate) struct Prepared {
    /// Stored and unsaved messages, then the turn's input.
    pub(crate) history: History,
    /// How many of them are in the store.
    pub(crate) stored_len: usize,
    /// The turn's input (client tool results, user message).
    pub(crate) input: Vec<Message>,
    /// The store's mark of the stored part of `history`, when this process
    /// may hold on to it after the turn (see `start`).
    pub(crate) mark: Option<HistoryMark>,
    /// Calls a person approved, run before the first model call.
    pub(crate) approved: Option<Box<looopy_loop::ApprovedCalls>>,
    /// What the person decided about the calls that waited, for the record.
    pub(crate) decided: Vec<looopy_core::record::DecisionStep>,
}

/// How a turn starts.
pub(crate) enum Start {
    /// A new turn on a prepared history.
    New(Prepared),
    /// The loop resumes the turn from its checkpoint (its process died).
    /// `saved`: the turn's end was already saved (the process died between
    /// saving and releasing its lease), so it is reported, not saved again.
    Resume { saved: bool },
}

/// Everything the turn task owns.
pub(crate) struct TurnRun {
    pub(crate) agent: Agent,
    pub(crate) guard: OwnedMutexGuard<()>,
    pub(crate) lease: Option<Lease>,
    pub(crate) start: Start,
    pub(crate) cx: TurnContext,
    pub(crate) turn_number: u64,
    pub(crate) tx: Handoff,
    /// Boxed: empty until the turn ends, and every running turn has one.
    pub(crate) summary: Arc<Mutex<Option<Box<FinishedTurn>>>>,
    /// Pause requests from the `AgentTurn`.
    pub(crate) pause: Arc<PauseRelay>,
    /// The turn's settings and per-turn tools, handed to the loop (again
    /// at a resume: checkpoints keep neither).
    pub(crate) input: looopy_loop::TurnInput,
}

/// What the loop left once its stream ended.
struct Pumped {
    final_event: Option<AgentEvent>,
    finished: Vec<ToolResult>,
}

/// Runs the turn to its end (see the module docs).
///
/// A plain function returning an `async move` block rather than an
/// `async fn`: an `async fn` keeps its argument twice in its future (the
/// argument, and the local it is moved into), and this future lives as
/// long as its turn, for every running conversation.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn stores its argument twice"
)]
pub(crate) fn drive(mut turn: TurnRun) -> impl Future<Output = ()> + Send {
    async move {
        // Fields are used in place, not moved into locals: the task's future
        // would hold them twice (it is alive for every running turn).
        let agent = &turn.agent;
        let cx = &turn.cx;
        if let Some(recorder) = &cx.recorder {
            recorder.begin().await;
            if let Start::New(prepared) = &mut turn.start {
                for decision in std::mem::take(&mut prepared.decided) {
                    recorder
                        .decision(Utc::now(), std::time::Duration::ZERO, decision)
                        .await;
                }
            }
        }
        // Sent after the turn's first event (its task), which must come first.
        let mut warnings = Vec::new();
        let mut loop_input = looopy_loop::TurnInput {
            settings: turn.input.settings.clone().also_building(DRIVER_READS),
            tools: turn.input.tools.clone(),
            stored_history: None,
        };
        let (stream, base, compaction, compaction_error, saved_before) = match &mut turn.start {
            Start::New(prepared) => {
                // Boxed, and only when configured: in place its wait would
                // take room in every running turn's future.
                let (compaction, compaction_error) = if agent.inner.shared.settings.compaction.auto
                {
                    Box::pin(maybe_compact(
                        agent,
                        &mut prepared.history,
                        prepared.stored_len,
                        cx,
                    ))
                    .await
                } else {
                    (None, None)
                };
                let settings = &agent.inner.shared.settings;
                warnings = agent
                    .inner
                    .size_warnings
                    .check(
                        &settings.compaction,
                        &agent.inner.context_id,
                        &prepared.history,
                    )
                    .into_iter()
                    .map(|p| AgentEvent::new(cx.task_id.clone(), cx.context_id.clone(), p))
                    .collect();
                let sent = if settings.window_in_model {
                    prepared.history.clone()
                } else {
                    window::apply(&prepared.history, &settings.window)
                };
                let base = sent.len();
                if compaction.is_none()
                    && agent.checkpoints_beside_history()
                    && same_messages(&sent, &prepared.history)
                {
                    // The turn starts from the stored history, whole: its
                    // checkpoints refer to it instead of copying it.
                    loop_input.stored_history = prepared.mark.clone();
                }
                let agent_loop = &agent.inner.shared.agent_loop;
                let stream = match prepared.approved.take() {
                    Some(approved) => {
                        agent_loop.start_turn_approved(sent, cx.clone(), loop_input, *approved)
                    }
                    None => agent_loop.start_turn_with(sent, cx.clone(), loop_input),
                };
                (stream, base, compaction, compaction_error, false)
            }
            Start::Resume { saved } => {
                let stream = agent
                    .inner
                    .shared
                    .agent_loop
                    .resume_with(cx.clone(), loop_input);
                (stream, 0, None, None, *saved)
            }
        };
        let handle = stream.handle();
        turn.pause.attach(handle.clone());
        let mut recorder = ArtifactRecorder::new(
            agent.inner.shared.artifacts.clone(),
            agent.inner.context_id.clone(),
            cx.task_id.clone(),
            !saved_before && agent.turn_store_saves_artifacts(),
        );
        let mut pumped = Pumped {
            final_event: None,
            finished: Vec::new(),
        };
        let lost = turn.lease.as_ref().map(Lease::lost).unwrap_or_default();
        let reader = Reader {
            tx: &turn.tx,
            // Not narrowed: every internal event is built, and asked for.
            wants_results: (turn.input.settings.internal_events)
                .unwrap_or_default()
                .contains(DRIVER_READS),
        };
        let run = AssertUnwindSafe(pump(stream, reader, &mut recorder, &mut pumped, warnings))
            .catch_unwind();
        // The lease is renewed while the turn runs, on this future.
        let run = renewing(turn.lease.as_ref().map(Lease::renewal), run);
        let run = tokio::select! {
            run = run => run,
            // Polled again with every event of the turn: the cheap wait.
            () = WhenCancelled::new(&lost) => {
                // What the turn announced is stored, as when written while
                // it streamed.
                recorder.write_held().await;
                abandon(turn);
                return;
            }
        };
        if run.is_err() {
            tracing::error!(task_id = %cx.task_id, "the turn panicked; saving what it produced");
            pumped.final_event = None;
        }
        let held_artifacts = recorder.take_held().await;

        let outcome = handle.outcome();
        let end = outcome.as_ref().map_or(TurnEnd::Error, |o| o.end);
        let base = outcome.as_ref().map_or(base, |o| o.turn_start);
        // Shared with the loop's history: saved, kept for the next turn and
        // reported without a copy each (a message is copied only to change it).
        let mut produced = handle.history().tail_shared(base);
        if end != TurnEnd::InputRequired {
            client::close_open_calls(&mut produced, &pumped.finished, why_open(end));
        }

        let state = outcome.as_ref().map_or(TaskState::Failed, |o| o.state);
        let record = LastTurn {
            task_id: cx.task_id.to_string(),
            turn_number: turn.turn_number,
            state,
            finish_reason: end.as_str().to_owned(),
            at: Utc::now(),
        };
        let save_error = if saved_before {
            recorder.write_now(&held_artifacts).await;
            agent.set_lifecycle(LifecycleState::Ready);
            if let Some(lease) = turn.lease.take() {
                lease.release().await;
            }
            if agent.inner.shared.settings.auto_save && state.is_terminal() {
                commit::forget_checkpoint(agent, &cx.task_id).await;
            }
            None
        } else {
            let held = match &turn.start {
                Start::New(p) if compaction.is_none() => {
                    p.mark.clone().map(|mark| (mark, p.history.clone()))
                }
                _ => None,
            };
            let ended = state.is_terminal().then_some(&*cx.task_id);
            let artifacts = commit::HeldArtifacts {
                writes: held_artifacts,
                recorder: &mut recorder,
            };
            let lease = turn.lease.take();
            commit::finish(agent, &produced, record, lease, ended, held, artifacts).await
        };
        drop(turn.guard);

        let saved = agent.inner.shared.settings.auto_save && save_error.is_none();
        let mut event = pumped
            .final_event
            .unwrap_or_else(|| synthetic_final(cx, "the turn ended without a final event"));
        if let EventPayload::StatusUpdate { metadata, .. } = &mut *event.payload {
            let report = AgentTurnReport {
                turn_number: turn.turn_number,
                saved,
                save_error: save_error.clone(),
                compaction: compaction.as_ref().map(|c| c.to_json()),
                compaction_error,
            };
            // The final event is the loop's or `synthetic_final`: both
            // carry the loop's report.
            if let Some(turn_report) = &mut metadata.report {
                turn_report.agent = Some(report);
            }
        }
        let mut new_messages: Vec<Arc<Message>> = match &mut turn.start {
            Start::New(prepared) => std::mem::take(&mut prepared.input)
                .into_iter()
                .map(Arc::new)
                .collect(),
            Start::Resume { .. } => Vec::new(),
        };
        new_messages.extend(produced);
        let message = outcome.as_ref().and_then(|o| o.message.clone());
        let pending_tool_calls = match (&message, end) {
            (Some(m), TurnEnd::InputRequired) => m.tool_calls.clone(),
            _ => Vec::new(),
        };
        let usage = outcome.as_ref().map(|o| o.usage).unwrap_or_default();
        let iterations = outcome.as_ref().map_or(0, |o| o.iterations);
        crate::telemetry::record_end(&tracing::Span::current(), state, end, iterations, &usage);
        if let Some(recorder) = &cx.recorder {
            let end = end.as_str().to_owned();
            recorder
                .finish(looopy_core::record::RecordOutcome { state, end })
                .await;
        }
        *turn.summary.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Box::new(FinishedTurn {
                task_id: cx.task_id.to_string(),
                turn_number: turn.turn_number,
                end,
                state,
                message,
                usage,
                iterations,
                new_messages,
                pending_tool_calls,
                saved,
                save_error,
                compaction,
                artifact_ids: recorder.saved,
            }));
        // Nobody listening is fine: the turn is saved.
        turn.tx.send(event);
    }
}

/// Stops a turn whose lease another process took over: that process
/// carries the turn on from its checkpoint, so this one writes nothing more
/// (no messages, no state, no final event: the turn's stream just ends).
fn abandon(turn: TurnRun) {
    tracing::warn!(task_id = %turn.cx.task_id, "turn abandoned: another process took over its lease");
    turn.agent.set_lifecycle(LifecycleState::Ready);
    drop(turn);
}

/// The loop's internal events [`pump`] reads, built even when the turn's
/// caller asked for none: tool results (their artifacts are saved, and
/// the results of a turn that ends early are kept).
const DRIVER_READS: InternalEvents = InternalEvents::TOOL_COMPLETE;

/// Where the turn's events go.
struct Reader<'a> {
    tx: &'a Handoff,
    /// Whether the caller asked for the tool results (`internal:tool-complete`)
    /// that the driver has built for itself: when not, each is taken from
    /// its event, which goes no further, instead of copied.
    wants_results: bool,
}

/// Forwards the loop's events, writing artifacts on the way, and the
/// Agent's own `after_first` events after the first of them; keeps the
/// final event back.
///
/// A plain function returning an `async move` block (an `async fn` keeps
/// its arguments twice), and the rare wait for a result's artifacts boxed:
/// this future is part of every running turn's.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn stores its arguments twice"
)]
fn pump<'a>(
    mut stream: TurnStream,
    reader: Reader<'a>,
    recorder: &'a mut ArtifactRecorder,
    pumped: &'a mut Pumped,
    after_first: Vec<AgentEvent>,
) -> impl Future<Output = ()> + Send + 'a {
    async move {
        let tx = reader.tx;
        let mut after_first = after_first.into_iter();
        while let Some(event) = stream.next().await {
            if event.is_final() {
                pumped.final_event = Some(event);
                continue;
            }
            let result = if !reader.wants_results
                && matches!(*event.payload, EventPayload::ToolComplete { .. })
            {
                // Built for this driver only: the result is taken, and the
                // event goes no further.
                match *event.payload {
                    EventPayload::ToolComplete { result, .. } => Some(result),
                    _ => None,
                }
            } else {
                let result = match &*event.payload {
                    EventPayload::ArtifactUpdate { .. } => {
                        recorder.observe(&event).await;
                        None
                    }
                    EventPayload::ToolStart { .. } => {
                        // The tool may read the conversation's artifacts.
                        recorder.write_held().await;
                        None
                    }
                    EventPayload::ToolComplete { result, .. } => Some(result.clone()),
                    _ => None,
                };
                tx.send(event);
                for extra in after_first.by_ref() {
                    tx.send(extra);
                }
                result
            };
            // A finished call: its artifacts are announced, its result kept
            // (for the calls a turn that ends early leaves open).
            if let Some(result) = result {
                if !result.artifacts.is_empty() {
                    for artifact_event in Box::pin(recorder.tool_artifacts(&result)).await {
                        tx.send(artifact_event);
                    }
                }
                pumped.finished.push(result);
            }
        }
    }
}

fn why_open(end: TurnEnd) -> &'static str {
    match end {
        TurnEnd::Cancelled => "the turn was cancelled before this tool call finished",
        TurnEnd::Error | TurnEnd::MaxDuration | TurnEnd::ToolFailed => {
            "the turn failed before this tool call finished"
        }
        _ => "the turn ended before this tool call finished",
    }
}

fn synthetic_final(cx: &TurnContext, why: &str) -> AgentEvent {
    let report = TurnReport::new(TurnEnd::Error).with_error(TurnError::new("internal", why));
    AgentEvent::new(
        cx.task_id.clone(),
        cx.context_id.clone(),
        EventPayload::StatusUpdate {
            status: TaskStatus::new(TaskState::Failed).with_message(Message::assistant(why)),
            is_final: true,
            metadata: StatusMetadata::report(report),
        },
    )
}

/// Whether `a` and `b` hold the same messages (shared ones compare by
/// pointer, which is all of them when the window cut nothing).
fn same_messages(a: &History, b: &History) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| std::ptr::eq(x, y) || x == y)
}

/// Compacts before the turn when due (the caller checks that compaction is
/// configured). A failure is logged and reported in the final event; the
/// turn runs on the full history.
async fn maybe_compact(
    agent: &Agent,
    history: &mut History,
    stored_len: usize,
    cx: &TurnContext,
) -> (Option<CompactionReport>, Option<String>) {
    let config = &agent.inner.shared.settings.compaction;
    let messages = history.to_vec();
    if !config.is_exceeded_by(&messages) {
        return (None, None);
    }
    let started = (chrono::Utc::now(), std::time::Instant::now());
    let result = compaction::compact(
        agent.inner.shared.summarizer.as_ref(),
        agent.inner.shared.messages.as_ref(),
        &agent.inner.context_id,
        &messages,
        stored_len,
        config,
        cx,
    )
    .await;
    match result {
        Ok(Some(done)) => {
            agent.record_compaction(&done.report);
            if let Some(recorder) = &cx.recorder {
                let (summarized_messages, kept_messages) =
                    (done.report.replaced, done.history.len());
                let kind = looopy_core::record::StepKind::Compaction {
                    summarized_messages,
                    kept_messages,
                };
                recorder.step(started.0, started.1.elapsed(), kind).await;
            }
            *history = History::from(done.history);
            (Some(done.report), None)
        }
        Ok(None) => (None, None),
        Err(error) => {
            tracing::warn!(context_id = %agent.inner.context_id, %error, "compaction failed; the turn runs on the full history");
            (None, Some(error.to_string()))
        }
    }
}

/// Where a turn's driver puts the events it hands to its [`AgentTurn`](crate::AgentTurn):
/// both run on the reader's task (the driver is polled from
/// `AgentTurn::poll_next`), so this is a buffer, not a channel: nothing
/// waits on it and nothing is woken by it. Once the [`AgentTurn`](crate::AgentTurn) is gone
/// the driver's events are dropped as they come.
#[derive(Clone, Default)]
pub(crate) struct Handoff(Arc<Mutex<VecDeque<AgentEvent>>>);

impl Handoff {
    /// Hands `event` to the reader, when there still is one.
    pub(crate) fn send(&self, event: AgentEvent) {
        if Arc::strong_count(&self.0) > 1 {
            self.lock().push_back(event);
        }
    }

    pub(crate) fn pop(&self) -> Option<AgentEvent> {
        self.lock().pop_front()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<AgentEvent>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
