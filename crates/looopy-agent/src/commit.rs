//! How a turn's end is saved: its messages, the state, the lease given
//! back and the checkpoint of a turn that ended for good deleted, as one
//! store operation ([`TurnStore::commit_turn`](looopy_core::store::TurnStore::commit_turn)) that first checks that the
//! turn still holds its lease.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::Utc;
use looopy_core::store::{
    ArtifactWrite, HistoryMark, LastTurn, LifecycleState, TurnArtifacts, TurnCommit,
};
use looopy_core::{History, Message, StoreError};

use crate::agent::{Agent, HeldHistory};
use crate::artifacts::ArtifactRecorder;
use crate::lease::Lease;

/// The artifact writes a turn held back for its end, and the recorder that
/// writes them itself when the end is saved without them.
pub(crate) struct HeldArtifacts<'r> {
    pub(crate) writes: Vec<ArtifactWrite>,
    pub(crate) recorder: &'r mut ArtifactRecorder,
}

/// Saves what a turn produced and gives its lease back; marks the agent
/// ready. `ended`: the task of a turn that ended for good (its checkpoint
/// goes once the messages are saved; an input-required turn keeps it).
/// `held`: the history the turn started from and its mark, kept for the
/// next turn once saved. `artifacts`: written with the end when the turn
/// store takes them, else before it. Returns why saving failed, if it did.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn stores its arguments twice"
)]
pub(crate) fn finish<'a>(
    agent: &'a Agent,
    produced: &'a [Arc<Message>],
    record: LastTurn,
    lease: Option<Lease>,
    ended: Option<&'a str>,
    held: Option<(HistoryMark, History)>,
    artifacts: HeldArtifacts<'a>,
) -> impl Future<Output = Option<String>> + Send + 'a {
    // A plain function returning an `async move` block: an `async fn`
    // keeps its arguments twice, and this future is part of
    // every running turn's.
    async move {
        let inner = &agent.inner;
        let HeldArtifacts { writes, recorder } = artifacts;
        if !inner.shared.settings.auto_save {
            // Nothing is saved: the messages wait in memory for `save()`.
            recorder.write_now(&writes).await;
            {
                let mut status = agent.status();
                status.held = None;
                status
                    .unsaved
                    .extend(produced.iter().map(|m| Message::clone(m)));
                mark_ended(status.state_mut(), record);
            }
            if let Some(lease) = lease {
                lease.release().await;
            }
            return None;
        }
        // Messages a failed save kept in memory go first, in the same one
        // commit; the history held for the next turn then no longer
        // matches what this turn started from.
        let older = std::mem::take(&mut agent.status().unsaved);
        let (batch, held): (Cow<'_, [Arc<Message>]>, _) = if older.is_empty() {
            (Cow::Borrowed(produced), held)
        } else {
            agent.status().held = None;
            let batch = older
                .into_iter()
                .map(Arc::new)
                .chain(produced.iter().cloned())
                .collect();
            (Cow::Owned(batch), None)
        };
        let produced = &batch[..];
        let record_task = record.task_id.clone();
        let snapshot = {
            let mut status = agent.status();
            mark_ended(status.state_mut(), record);
            inner
                .shared
                .states
                .is_some()
                .then(|| Arc::clone(&status.state))
        };
        let result = inner
            .shared
            .turns
            .commit_turn(TurnCommit {
                context_id: &inner.context_id,
                lease_owner: lease.as_ref().map(Lease::owner),
                messages: produced,
                state: snapshot.as_ref(),
                forget_checkpoint: ended
                    .filter(|_| inner.shared.agent_loop.checkpoint_store().is_some()),
                artifacts: (!writes.is_empty()).then_some(TurnArtifacts {
                    task_id: &record_task,
                    writes: &writes,
                }),
            })
            .await;
        let context_id = &inner.context_id;
        match result {
            Ok(()) => {
                // Released by the commit.
                drop(lease);
                agent.status().held = held.map(|(mark, mut history)| {
                    history.extend_shared(produced.iter().cloned());
                    HeldHistory {
                        mark: HistoryMark {
                            len: mark.len + produced.len(),
                            ..mark
                        },
                        history,
                    }
                });
                None
            }
            Err(error @ StoreError::LeaseLost { .. }) => {
                // Another process carries the conversation on: nothing of this
                // turn is kept to be saved later.
                tracing::error!(%context_id, %error, "the turn's end was refused: its lease was taken over");
                drop(lease);
                agent.status().held = None;
                Some(error.to_string())
            }
            Err(error) => {
                tracing::warn!(%context_id, %error, "could not save the turn's end; keeping its messages in memory");
                // Not known to be written: written again on their own (a put
                // twice is the same artifact; parts appended twice after a lost
                // reply are the one way this repeats content).
                recorder.write_now(&writes).await;
                {
                    let mut status = agent.status();
                    status.held = None;
                    status.unsaved = owned(produced);
                }
                if let Some(lease) = lease {
                    lease.release().await;
                }
                Some(error.to_string())
            }
        }
    }
}

fn mark_ended(state: &mut looopy_core::store::AgentState, record: LastTurn) {
    state.turn_count += 1;
    state.lifecycle = LifecycleState::Ready;
    state.last_activity = Utc::now();
    state.last_turn = Some(record);
}

/// Copies of shared messages, for what keeps messages as values (the
/// messages not saved yet, the store calls of a turn whose end is not one
/// store operation).
pub(crate) fn owned(messages: &[Arc<Message>]) -> Vec<Message> {
    messages.iter().map(|m| Message::clone(m)).collect()
}

/// Deletes the checkpoint of a turn that ended for good and whose messages
/// are saved: nothing will resume it. Done after the lease is released, so
/// that a process dying before this point leaves a checkpoint for the turn's
/// recovery to report the saved end from (a checkpoint left behind expires
/// with the store's time-to-live). An input-required turn keeps it.
pub(crate) async fn forget_checkpoint(agent: &Agent, task_id: &str) {
    if let Some(store) = agent.inner.shared.agent_loop.checkpoint_store()
        && let Err(error) = store.delete(task_id).await
    {
        tracing::warn!(task_id, %error, "could not delete an ended turn's checkpoint");
    }
}
