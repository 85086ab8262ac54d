//! What is persisted when, and what resume derives from it.
//!
//! A checkpoint is taken before each iteration, after each model call, after
//! each tool call that finishes, and at the end of the turn. The history in a
//! checkpoint is a [`History`] snapshot: taking one copies nothing.
//!
//! Saves go through a [`CheckpointWriter`]: a task that writes the newest
//! snapshot while the turn goes on, so that the model call or the tools of
//! an iteration overlap the round trip of the checkpoint before them, and
//! snapshots taken while a save is running collapse into one save of the
//! newest. The turn waits for the writer at its end, before its final event,
//! and before it runs a call of a tool that is not idempotent (that call
//! must be on record first, or a resume would run it again). What a crash
//! can lose is the snapshot still in flight: a resume then repeats at most
//! the work done since the last save that landed, idempotent calls included.
//! A store in this process's memory ([`CheckpointStore::in_place`])
//! gets no writer task: each snapshot is saved as it is taken, a map insert
//! cheaper than the hand-over to a task, and nothing is left to wait for.
//!
//! A checkpoint also names the turn's answers that were streamed as
//! artifacts ([`StreamedAnswer`]); a resume announces them again from the
//! recorded messages ([`announce_streamed`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::record::{CheckpointStep, Recorder, StepKind};
use looopy_core::store::{CheckpointStore, HistoryMark, StreamedAnswer, TaskCheckpoint};
use looopy_core::{History, Role, TaskState, ToolCall, ToolResult, TurnContext, Usage};
use tokio::sync::{mpsc, oneshot};

use crate::events::Emitter;

/// The parts of a turn a checkpoint records.
pub(crate) struct Snapshot<'a> {
    pub(crate) iteration: u32,
    pub(crate) state: TaskState,
    pub(crate) history: &'a History,
    pub(crate) turn_start: usize,
    pub(crate) usage: Usage,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) completed: &'a [ToolResult],
    pub(crate) streamed: &'a [StreamedAnswer],
    pub(crate) stored_history: Option<&'a HistoryMark>,
}

/// The checkpoint a snapshot stands for.
fn checkpoint_of(cx: &TurnContext, s: Snapshot<'_>) -> TaskCheckpoint {
    TaskCheckpoint {
        task_id: Arc::clone(&cx.task_id),
        context_id: Arc::clone(&cx.context_id),
        agent_id: Arc::clone(&cx.agent_id),
        iteration: s.iteration,
        state: s.state,
        messages: s.history.clone(),
        turn_start: s.turn_start,
        usage: s.usage,
        completed_tool_results: s.completed.to_vec(),
        streamed_answers: s.streamed.to_vec(),
        stored_history: s.stored_history.cloned(),
        created_at: s.created_at,
        updated_at: Utc::now(),
        metadata: Default::default(),
    }
}

pub(crate) enum Request {
    /// A checkpoint, and the turn's recorder its save is written to.
    Save(Box<TaskCheckpoint>, Option<Recorder>),
    Flush(oneshot::Sender<()>),
}

/// Writes a turn's checkpoints: in the background, newest first, or, for a
/// store that [saves in place](CheckpointStore::in_place), as they are
/// taken (see the module docs). A failing store is logged and the turn goes
/// on: it loses crash safety, not its work.
pub(crate) enum CheckpointWriter {
    /// No store: snapshots are dropped.
    Off,
    /// Each snapshot is saved when submitted; nothing is left to flush.
    InPlace {
        store: Arc<dyn CheckpointStore>,
        emit: Emitter,
    },
    /// A task saving the newest snapshot while the turn goes on.
    Background(mpsc::UnboundedSender<Request>),
}

impl CheckpointWriter {
    /// A writer to `store`; without a store, snapshots are dropped.
    pub(crate) fn new(store: Option<Arc<dyn CheckpointStore>>, emit: Emitter) -> Self {
        match store {
            None => CheckpointWriter::Off,
            Some(store) if store.in_place().is_some() => CheckpointWriter::InPlace { store, emit },
            Some(store) => {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(write_newest(store, rx, emit));
                CheckpointWriter::Background(tx)
            }
        }
    }

    /// Saves a snapshot (in place) or hands it to the writer; returns at once.
    pub(crate) fn submit(&self, cx: &TurnContext, snapshot: Snapshot<'_>) {
        match self {
            CheckpointWriter::Off => {}
            CheckpointWriter::InPlace { store, emit } => {
                let checkpoint = checkpoint_of(cx, snapshot);
                let Some(in_place) = store.in_place() else {
                    // It said it saves in place when the writer was made,
                    // and no longer does: saved on a task of its own.
                    let (store, emit, task_id) = (store.clone(), emit.clone(), cx.task_id.clone());
                    let recorder = cx.recorder.clone();
                    tokio::spawn(async move {
                        save_reported(&*store, checkpoint, &task_id, &emit, recorder.as_ref())
                            .await;
                    });
                    return;
                };
                let saving = Saving::new(&checkpoint, &cx.task_id, emit);
                // Saved in this process's memory, the checkpoint dies with
                // it: its step is written with the turn's next step.
                if let (Some(recorder), Some((started_at, duration, step))) =
                    (&cx.recorder, saving.report(in_place.save_now(checkpoint)))
                {
                    recorder.checkpoint(started_at, duration, step);
                }
            }
            CheckpointWriter::Background(tx) => {
                let _ = tx.send(Request::Save(
                    Box::new(checkpoint_of(cx, snapshot)),
                    cx.recorder.clone(),
                ));
            }
        }
    }

    /// Waits until every snapshot submitted so far was written (or failed).
    pub(crate) async fn flush(&self) {
        if let CheckpointWriter::Background(tx) = self {
            let (done, wait) = oneshot::channel();
            if tx.send(Request::Flush(done)).is_ok() {
                let _ = wait.await;
            }
        }
    }
}

/// Hands a checkpoint to the store, then reports it (see [`Saving`];
/// `task_id`: the checkpoint's, which the store takes).
async fn save_reported(
    store: &dyn CheckpointStore,
    checkpoint: TaskCheckpoint,
    task_id: &str,
    emit: &Emitter,
    recorder: Option<&Recorder>,
) {
    let saving = Saving::new(&checkpoint, task_id, emit);
    let saved = saving.report(store.save_owned(checkpoint).await);
    // The store outlives this process: the save is on record before the
    // next one, for a resume to point at.
    if let (Some(recorder), Some((started_at, duration, step))) = (recorder, saved) {
        recorder
            .step(started_at, duration, StepKind::Checkpoint(step))
            .await;
    }
}

/// A checkpoint save under way: what its report says.
struct Saving<'a> {
    saved: CheckpointStep,
    task_id: &'a str,
    emit: &'a Emitter,
    started: (DateTime<Utc>, Instant),
}

impl<'a> Saving<'a> {
    fn new(checkpoint: &TaskCheckpoint, task_id: &'a str, emit: &'a Emitter) -> Self {
        Saving {
            saved: CheckpointStep {
                iteration: checkpoint.iteration,
                messages: checkpoint.messages.len(),
            },
            task_id,
            emit,
            started: (Utc::now(), Instant::now()),
        }
    }

    /// Emits the saved checkpoint's event and returns its step for the
    /// turn's record (when it started, how long it took, what it saved),
    /// or logs why its save failed.
    fn report(
        self,
        saved: Result<(), StoreError>,
    ) -> Option<(DateTime<Utc>, std::time::Duration, CheckpointStep)> {
        match saved {
            Ok(()) => {
                let CheckpointStep {
                    iteration,
                    messages,
                } = self.saved;
                self.emit.checkpoint(iteration, messages);
                Some((self.started.0, self.started.1.elapsed(), self.saved))
            }
            Err(error) => {
                let task_id = self.task_id;
                tracing::warn!(task_id, %error, "checkpoint failed; the turn continues without it");
                None
            }
        }
    }
}

/// Saves the newest of the waiting snapshots, one save at a time, and
/// answers flushes once what came before them is written.
async fn write_newest(
    store: Arc<dyn CheckpointStore>,
    mut rx: mpsc::UnboundedReceiver<Request>,
    emit: Emitter,
) {
    while let Some(first) = rx.recv().await {
        let mut newest = None;
        let mut flushes = Vec::new();
        let mut take = |request| match request {
            Request::Save(c, recorder) => newest = Some((c, recorder)),
            Request::Flush(done) => flushes.push(done),
        };
        take(first);
        while let Ok(more) = rx.try_recv() {
            take(more);
        }
        if let Some((checkpoint, recorder)) = newest {
            let task_id = checkpoint.task_id.clone();
            save_reported(&*store, *checkpoint, &task_id, &emit, recorder.as_ref()).await;
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// Announces again, whole (one `artifact-update` with the message's text),
/// each answer a resumed turn's checkpoint says was streamed: the process
/// that streamed it may have died before the Agent stored its artifact
/// (the Agent may hold streamed writes until the turn's end is saved), and
/// a checkpoint that records the answer lets the resume end without asking
/// the model again. A stored artifact is replaced by the same text.
pub(crate) fn announce_streamed(emit: &Emitter, history: &History, answers: &[StreamedAnswer]) {
    for answer in answers {
        let Some(message) = history.get(answer.message) else {
            continue;
        };
        let text = message.text();
        if !text.is_empty() {
            emit.text_chunk(&answer.artifact_id, text, true, true);
        }
    }
}

/// The calls a resumed turn still has to run: those of the history's last
/// assistant message with neither a tool message after it nor a result in
/// `completed`. `approved` is true when that message is older than the
/// turn (before `turn_start`): a turn runs calls of an earlier message only
/// when a person approved them (see `AgentLoop::start_turn_approved`), so
/// a resume runs them without asking again.
pub(crate) fn pending_calls(
    history: &History,
    turn_start: usize,
    completed: &[ToolResult],
) -> Pending {
    let Some((position, assistant)) = history
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::Assistant)
    else {
        return Pending::default();
    };
    let mut answered: HashSet<&str> = history
        .iter()
        .skip(position + 1)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    answered.extend(completed.iter().map(|r| r.tool_call_id.as_str()));
    let calls = assistant
        .tool_calls
        .iter()
        .enumerate()
        .filter(|(_, c)| !answered.contains(c.id.as_str()))
        .map(|(i, c)| (i, c.clone()))
        .collect();
    Pending {
        calls,
        approved: position < turn_start,
    }
}

/// What [`pending_calls`] found.
#[derive(Default)]
pub(crate) struct Pending {
    /// The calls, with their position in the assistant message.
    pub(crate) calls: Vec<(usize, ToolCall)>,
    /// A person approved them (their message is older than the turn).
    pub(crate) approved: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::{LlmResponse, Message};

    #[test]
    fn pending_calls_skip_answered_and_completed() {
        let mut h = History::from(vec![Message::user("q")]);
        h.push(
            LlmResponse::tool_calls(
                "",
                vec![
                    ToolCall::new("a", "t", "{}"),
                    ToolCall::new("b", "t", "{}"),
                    ToolCall::new("c", "t", "{}"),
                ],
            )
            .message,
        );
        h.push(ToolResult::text("a", "1").into_message());
        let pending = pending_calls(&h, 0, &[ToolResult::text("c", "3")]);
        assert!(!pending.approved);
        assert_eq!(pending.calls.len(), 1);
        assert_eq!(pending.calls[0].0, 1);
        assert_eq!(pending.calls[0].1.id, "b");
        // The message is older than the turn: calls a person approved.
        let approved = pending_calls(&h, 2, &[]);
        assert!(approved.approved);
        let ids: Vec<&str> = approved.calls.iter().map(|(_, c)| c.id.as_str()).collect();
        assert_eq!(ids, ["b", "c"]);
        // Nothing open: nothing to run.
        h.push(ToolResult::text("b", "2").into_message());
        h.push(ToolResult::text("c", "3").into_message());
        assert!(pending_calls(&h, 4, &[]).calls.is_empty());
    }
}
