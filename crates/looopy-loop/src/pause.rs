//! Pause and resume inside a turn: a paused turn stops before its
//! next model call or tool call and goes on when resumed. Cancellation works
//! while paused.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use looopy_core::CancellationToken;
use tokio::sync::Notify;

use crate::events::Emitter;

/// The pause switch of one turn. Every turn has one and few are ever
/// paused, so it is small: a flag, the reason, and a wake-up for waiters.
#[derive(Default)]
pub(crate) struct PauseGate {
    reason: Mutex<Option<String>>,
    changed: Notify,
    announced: AtomicBool,
}

impl PauseGate {
    fn reason(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.reason.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn pause(&self, reason: impl Into<String>) {
        *self.reason() = Some(reason.into());
        self.changed.notify_waiters();
    }

    pub(crate) fn resume(&self) {
        *self.reason() = None;
        self.changed.notify_waiters();
    }

    pub(crate) fn is_paused(&self) -> bool {
        self.reason().is_some()
    }

    /// Returns at once when not paused; otherwise waits for `resume` (true)
    /// or cancellation (false). The first waiter announces the pause and the
    /// resumption, so parallel tool calls waiting together emit one pair.
    pub(crate) async fn wait(&self, cancel: &CancellationToken, emit: &Emitter) -> bool {
        let Some(reason) = self.reason().clone() else {
            return true;
        };
        if !self.announced.swap(true, Ordering::SeqCst) {
            emit.paused(reason);
        }
        let resumed = loop {
            // Registered before the check, so a resume between the two wakes it.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !self.is_paused() {
                break true;
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => break false,
                () = changed => {}
            }
        };
        if resumed && self.announced.swap(false, Ordering::SeqCst) {
            emit.resumed();
        }
        resumed
    }
}
