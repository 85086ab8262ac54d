//! Resuming a turn from its last checkpoint ([`AgentLoop::resume`]).

use std::sync::Arc;

use looopy_core::{History, TurnContext};

use crate::checkpoint;
use crate::input::TurnInput;
use crate::stream::{TurnOutcome, TurnShared, TurnStream};
use crate::turn::Turn;
use crate::{AgentLoop, LoopError};
use looopy_core::{TurnEnd, TurnError, TurnReport};

impl AgentLoop {
    /// Continues the turn of `cx.task_id` from its last checkpoint: tool calls
    /// whose results were recorded are not run again. A turn that had already
    /// ended just reports its final state again.
    ///
    /// Per-turn settings and tools are not stored in the checkpoint: the
    /// resumed turn runs with the loop's settings and tools only (see
    /// [`resume_with`](Self::resume_with)).
    pub fn resume(&self, cx: TurnContext) -> TurnStream {
        self.resume_with(cx, TurnInput::new())
    }

    /// [`resume`](Self::resume) with inputs for the rest of the turn
    /// ([`TurnInput`]: settings and per-turn tools; the checkpoint does not
    /// keep the ones it started with, so a caller that offered tools for
    /// the turn hands them again here). A wall-time limit counts from the
    /// resume.
    pub fn resume_with(&self, cx: TurnContext, input: impl Into<TurnInput>) -> TurnStream {
        let mut input = input.into();
        let cx = self.turn_context(cx);
        let (emit, rx) = self.channel(&cx, &mut input.settings);
        let shared = Arc::new(TurnShared::default());
        let this = self.clone();
        let shared2 = shared.clone();
        let driver = async move {
            let checkpoint = match &this.parts.task_store {
                None => Err(LoopError::NoTaskStore),
                Some(store) => match store.load(&cx.task_id).await {
                    Ok(Some(c)) => Ok(c),
                    Ok(None) => Err(LoopError::NoCheckpoint {
                        task_id: cx.task_id.to_string(),
                    }),
                    Err(e) => Err(LoopError::Store(e)),
                },
            };
            if let (Ok(c), Some(recorder)) = (&checkpoint, &cx.recorder) {
                recorder
                    .recovered(looopy_core::record::CheckpointStep {
                        iteration: c.iteration,
                        messages: c.messages.len(),
                    })
                    .await;
            }
            match checkpoint {
                Err(e) => {
                    let text = format!("cannot resume: {e}");
                    let message = Arc::new(looopy_core::Message::assistant(text.clone()));
                    shared2.set_outcome(TurnOutcome {
                        end: TurnEnd::Error,
                        state: TurnEnd::Error.state(),
                        message: Some(message.clone()),
                        usage: Default::default(),
                        iterations: 0,
                        history: History::new(),
                        turn_start: 0,
                    });
                    emit.final_status(
                        Some(message),
                        TurnReport::new(TurnEnd::Error).with_error(TurnError::new("resume", text)),
                    );
                }
                Ok(c) if c.state.ends_turn() => {
                    shared2.set_history(c.messages.clone());
                    let end = TurnEnd::of_saved_state(c.state);
                    checkpoint::announce_streamed(&emit, &c.messages, &c.streamed_answers);
                    let message = c.messages.last_shared().cloned();
                    // The outcome is there once the final event is, as for
                    // a turn that runs.
                    shared2.set_outcome(TurnOutcome {
                        end,
                        state: c.state,
                        message: message.clone(),
                        usage: c.usage,
                        iterations: c.iteration,
                        history: c.messages.clone(),
                        turn_start: c.turn_start,
                    });
                    let report = TurnReport {
                        iterations: c.iteration,
                        usage: c.usage,
                        ..TurnReport::new(end)
                    };
                    emit.final_status(message, report);
                }
                Ok(c) => {
                    shared2.set_history(c.messages.clone());
                    Turn::from_checkpoint(this.parts.clone(), cx, emit, shared2, c, input)
                        .run(true)
                        .await;
                }
            }
        };
        TurnStream::new(Box::pin(driver), rx, shared, History::new())
    }
}
