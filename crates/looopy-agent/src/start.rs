//! How a turn starts: the lease, the stored state and the history in one
//! store operation ([`TurnStore::begin_turn`](looopy_core::store::TurnStore::begin_turn)), then the turn's input.
//!
//! When this process holds the history from its last turn (with a turn
//! lock, whose lease keeps other writers out during a turn), it builds the
//! input from that history and hands it to the start, which appends it
//! only if the stored history is still the held one; it reads only what
//! others appended since otherwise. So a turn in a conversation this
//! process already serves starts in one operation and deserialises no old
//! message.

use std::sync::Arc;

use looopy_core::store::{Acquire, HistoryMark, LeaseRequest, LoadedHistory, TurnBegin, TurnBegun};
use looopy_core::{History, Message};

use crate::agent::Agent;
use crate::client;
use crate::driver::Prepared;
use crate::error::{AgentBusy, AgentError, BusyHolder};
use crate::lease::Lease;

impl Agent {
    /// Takes the lease (when a lock is configured), reads the state and the
    /// history, and saves the turn's input (client tool results, then the
    /// user message). On an error no lease is held.
    pub(crate) async fn begin(
        &self,
        user: Option<Message>,
        task_id: &str,
    ) -> Result<(Option<Lease>, Prepared), AgentError> {
        let inner = &self.inner;
        let context_id = &inner.context_id;
        let shared = inner.shared.turn_lock.is_some();
        let auto = inner.shared.settings.auto_save;
        let owner = uuid::Uuid::new_v4().to_string();
        // The input built from the held history, when everything is saved.
        let held = {
            let status = self.status();
            (shared && auto && status.unsaved.is_empty())
                .then(|| status.held.clone())
                .flatten()
        };
        // Built again from the fresh history when this one turns out stale
        // (or refuses the input: the calls it answers may be newer).
        let early = held
            .as_ref()
            .and_then(|h| client::prepare_input(&h.history, user.clone()).ok());
        let begun = inner
            .shared
            .turns
            .begin_turn(TurnBegin {
                context_id,
                lease: shared.then_some(LeaseRequest {
                    owner: &owner,
                    task_id: Some(task_id),
                    ttl: inner.shared.settings.lock_ttl,
                }),
                load_state: shared && inner.shared.states.is_some(),
                known: held.as_ref().map(|h| &h.mark),
                input: early.as_ref().map_or(&[][..], |e| e.messages.as_slice()),
            })
            .await?;
        let begun = match begun {
            TurnBegun::Begun(begun) => *begun,
            TurnBegun::Refused(Acquire::Stranded { task_id }) => {
                return Err(AgentError::Busy(AgentBusy {
                    context_id: context_id.to_string(),
                    holder: BusyHolder::StrandedTurn,
                    task_id: Some(task_id),
                }));
            }
            TurnBegun::Refused(_) => {
                return Err(AgentError::busy(context_id, BusyHolder::OtherOwner));
            }
        };
        let lease = inner.shared.turn_lock.as_ref().map(|lock| {
            Lease::held(
                Arc::clone(lock),
                context_id.clone(),
                owner,
                inner.shared.settings.lock_ttl,
            )
        });
        if let Some(state) = begun.state {
            self.apply_shared_state(state);
        }
        let (stored, mark) = match begun.history {
            LoadedHistory::Whole { messages, mark } => (History::from(messages), mark),
            LoadedHistory::Tail { messages, mark } => {
                let mut history = held.map(|h| h.history).unwrap_or_default();
                history.extend(messages);
                (history, Some(mark))
            }
        };
        let prepared = match early {
            Some(client::Input {
                messages: input,
                approved,
                decided,
            }) if begun.input_saved => {
                let mut history = stored;
                let stored_len = history.len() + input.len();
                history.extend(input.iter().cloned());
                let mark = mark.map(|m| HistoryMark {
                    len: m.len + input.len(),
                    ..m
                });
                Ok(Prepared {
                    history,
                    stored_len,
                    input,
                    mark,
                    approved,
                    decided,
                })
            }
            _ => self.add_input(stored, mark, user).await,
        };
        match prepared {
            Ok(prepared) => Ok((lease, prepared)),
            Err(e) => {
                if let Some(lease) = lease {
                    lease.release().await;
                }
                Err(e)
            }
        }
    }

    /// Adds the turn's input to the history read at the start, saving
    /// earlier unsaved messages and then the input (one store call each).
    async fn add_input(
        &self,
        stored: History,
        mark: Option<HistoryMark>,
        user: Option<Message>,
    ) -> Result<Prepared, AgentError> {
        let context_id = &self.inner.context_id;
        let auto = self.inner.shared.settings.auto_save;
        let mut history = stored;
        // The mark is kept only while every write of this turn is known.
        let mut mark = mark.filter(|_| self.inner.shared.turn_lock.is_some());
        let earlier = self.status().unsaved.clone();
        if !earlier.is_empty() {
            mark = None;
            if auto && let Err(error) = self.flush_unsaved().await {
                tracing::warn!(%context_id, %error, "could not save earlier messages; keeping them in memory");
            }
            history.extend(earlier);
        }
        let mut stored_len = history.len() - self.status().unsaved.len();
        let client::Input {
            messages: input,
            approved,
            decided,
        } = client::prepare_input(&history, user)?;
        if history.is_empty() && input.is_empty() {
            return Err(AgentError::EmptyTurn);
        }
        if input.is_empty() {
            // A plain continuation: nothing to save.
        } else if auto && self.status().unsaved.is_empty() {
            self.inner
                .shared
                .messages
                .append(context_id, &input)
                .await?;
            stored_len += input.len();
            if let Some(m) = &mut mark {
                m.len += input.len();
            }
        } else {
            mark = None;
            self.status().unsaved.extend(input.iter().cloned());
        }
        history.extend(input.iter().cloned());
        Ok(Prepared {
            history,
            stored_len,
            input,
            mark,
            approved,
            decided,
        })
    }
}
