//! Pause and resume inside a turn (seed 002): a paused turn stops before its
//! next model call or tool call and goes on when resumed. Cancellation works
//! while paused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use looopy_core::CancellationToken;
use tokio::sync::watch;

use crate::events::Emitter;

/// The pause switch of one turn.
#[derive(Clone)]
pub(crate) struct PauseGate {
    state: Arc<watch::Sender<Option<String>>>,
    announced: Arc<AtomicBool>,
}

impl Default for PauseGate {
    fn default() -> Self {
        PauseGate {
            state: Arc::new(watch::Sender::new(None)),
            announced: Arc::default(),
        }
    }
}

impl PauseGate {
    pub(crate) fn pause(&self, reason: impl Into<String>) {
        self.state.send_replace(Some(reason.into()));
    }

    pub(crate) fn resume(&self) {
        self.state.send_replace(None);
    }

    pub(crate) fn is_paused(&self) -> bool {
        self.state.borrow().is_some()
    }

    /// Returns at once when not paused; otherwise waits for `resume` (true)
    /// or cancellation (false). The first waiter announces the pause and the
    /// resumption, so parallel tool calls waiting together emit one pair.
    pub(crate) async fn wait(&self, cancel: &CancellationToken, emit: &Emitter) -> bool {
        let mut rx = self.state.subscribe();
        let reason = rx.borrow_and_update().clone();
        let Some(reason) = reason else { return true };
        if !self.announced.swap(true, Ordering::SeqCst) {
            emit.paused(reason);
        }
        let resumed = tokio::select! {
            biased;
            _ = cancel.cancelled() => false,
            r = rx.wait_for(Option::is_none) => r.is_ok(),
        };
        if resumed && self.announced.swap(false, Ordering::SeqCst) {
            emit.resumed();
        }
        resumed
    }
}
