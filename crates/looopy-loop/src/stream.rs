//! [`TurnStream`]: the events of a turn, and what it left behind.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use futures::Stream;
use looopy_core::{AgentEvent, History, Message, TaskState, Usage};

use crate::pause::PauseGate;
use crate::queue::EventQueue;
use looopy_core::TurnEnd;

/// How a turn ended and what it produced.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// Why it ended.
    pub end: TurnEnd,
    /// The task state it ended in.
    pub state: TaskState,
    /// The final message (the answer, the error, the pending client calls),
    /// shared with the history and the final event.
    pub message: Option<Arc<Message>>,
    /// Tokens used by the turn.
    pub usage: Usage,
    /// Iterations run.
    pub iterations: u32,
    /// The whole history at the end.
    pub history: History,
    /// Where the turn's own messages start in `history`.
    pub turn_start: usize,
}

impl TurnOutcome {
    /// The messages the turn added.
    pub fn new_messages(&self) -> Vec<Message> {
        self.history.tail(self.turn_start)
    }
}

/// State a turn shares with whoever holds its [`TurnHandle`].
#[derive(Default)]
pub(crate) struct TurnShared {
    history: Mutex<Option<History>>,
    /// Boxed: empty for the whole turn, and every running turn has one.
    outcome: Mutex<Option<Box<TurnOutcome>>>,
    pub(crate) pause: PauseGate,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TurnShared {
    pub(crate) fn set_history(&self, history: History) {
        *lock(&self.history) = Some(history);
    }

    pub(crate) fn set_outcome(&self, outcome: TurnOutcome) {
        *lock(&self.outcome) = Some(Box::new(outcome));
    }
}

/// A view of a turn that outlives its stream: the history so far (also when
/// the turn failed or was dropped midway) and the outcome once it ended.
#[derive(Clone)]
pub struct TurnHandle {
    shared: Arc<TurnShared>,
    initial: History,
}

impl TurnHandle {
    /// The history as the turn last left it (the input when nothing was added yet).
    pub fn history(&self) -> History {
        lock(&self.shared.history)
            .clone()
            .unwrap_or_else(|| self.initial.clone())
    }

    /// Pauses the turn before its next model call or tool call.
    /// An `internal:execution-paused` event says when it stopped.
    pub fn pause(&self, reason: impl Into<String>) {
        self.shared.pause.pause(reason);
    }

    /// Lets a paused turn go on.
    pub fn resume(&self) {
        self.shared.pause.resume();
    }

    /// Whether a pause is requested.
    pub fn is_paused(&self) -> bool {
        self.shared.pause.is_paused()
    }

    /// The outcome, once the final event was produced.
    pub fn outcome(&self) -> Option<TurnOutcome> {
        lock(&self.shared.outcome).as_deref().cloned()
    }
}

type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The events of one turn, in order, ending with a `status-update` whose
/// `final` is true.
///
/// The turn runs as the stream is polled, on the polling task: nothing is
/// spawned. Dropping the stream drops the turn at its next await point (a
/// running model call or tool is aborted); to cancel and still get the final
/// `canceled` event, fire the turn's cancellation token instead. To run a turn
/// detached from its reader, spawn a task that drains the stream.
pub struct TurnStream {
    driver: Option<Driver>,
    events: Arc<EventQueue>,
    handle: TurnHandle,
}

impl TurnStream {
    pub(crate) fn new(
        driver: Driver,
        events: Arc<EventQueue>,
        shared: Arc<TurnShared>,
        initial: History,
    ) -> Self {
        TurnStream {
            driver: Some(driver),
            events,
            handle: TurnHandle { shared, initial },
        }
    }

    /// A handle that stays valid after the stream is consumed or dropped.
    pub fn handle(&self) -> TurnHandle {
        self.handle.clone()
    }

    /// Drains the stream and returns the outcome with every event.
    pub async fn collect_all(mut self) -> (Vec<AgentEvent>, Option<TurnOutcome>) {
        use futures::StreamExt;
        let mut events = Vec::new();
        while let Some(e) = self.next().await {
            events.push(e);
        }
        (events, self.handle.outcome())
    }
}

impl Stream for TurnStream {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        // Handed out in order: what was queued before this poll first.
        let this = &mut *self;
        if let Some(event) = this.events.pop() {
            return Poll::Ready(Some(event));
        }
        if let Some(driver) = this.driver.as_mut() {
            this.events.stop_waiting();
            if driver.as_mut().poll(cx).is_ready() {
                this.driver = None;
            }
        }
        match this.events.poll_pop(cx.waker()) {
            Poll::Ready(event) => Poll::Ready(Some(event)),
            // The turn is over and everything it queued was handed out (the
            // queue is never closed: the turn's end is the driver's).
            Poll::Pending if this.driver.is_none() => Poll::Ready(None),
            // The turn is pending: it, or a push from the checkpoint
            // writer, wakes this task.
            _ => Poll::Pending,
        }
    }
}
