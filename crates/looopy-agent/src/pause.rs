//! [`PauseRelay`]: pause and resume from an [`AgentTurn`](crate::AgentTurn).
//!
//! The loop's [`TurnHandle`] exists only once the turn's driver has started
//! the loop (after compaction), while the caller holds its `AgentTurn` from
//! the moment `execute_turn` returns. The relay keeps a pause asked for
//! before that and hands it to the handle when the loop starts; after that
//! it forwards.

use std::sync::{Mutex, MutexGuard, PoisonError};

use looopy_loop::TurnHandle;

/// Where pause requests go.
#[derive(Default)]
pub(crate) struct PauseRelay {
    state: Mutex<State>,
}

enum State {
    /// The loop has not started: the pause asked for so far, if any.
    Waiting(Option<String>),
    /// The loop runs: requests go to its handle.
    Live(TurnHandle),
}

impl Default for State {
    fn default() -> Self {
        State::Waiting(None)
    }
}

impl PauseRelay {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn pause(&self, reason: String) {
        match &mut *self.state() {
            State::Waiting(pending) => *pending = Some(reason),
            State::Live(handle) => handle.pause(reason),
        }
    }

    pub(crate) fn resume(&self) {
        match &mut *self.state() {
            State::Waiting(pending) => *pending = None,
            State::Live(handle) => handle.resume(),
        }
    }

    pub(crate) fn is_paused(&self) -> bool {
        match &*self.state() {
            State::Waiting(pending) => pending.is_some(),
            State::Live(handle) => handle.is_paused(),
        }
    }

    /// The loop started: applies a pause asked for before, then forwards.
    pub(crate) fn attach(&self, handle: TurnHandle) {
        let mut state = self.state();
        if let State::Waiting(Some(reason)) = &*state {
            handle.pause(reason.clone());
        }
        *state = State::Live(handle);
    }
}
