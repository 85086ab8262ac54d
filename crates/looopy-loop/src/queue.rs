//! [`EventQueue`]: the events a turn produced that its stream has not
//! handed out yet.
//!
//! Not a channel: the turn runs inside its own [`TurnStream`](crate::TurnStream)
//! (the stream polls the turn, then hands out what it queued), so nearly
//! every event is pushed and popped by the same task. A channel would
//! allocate a node (or a block of slots) per event and wake the reading
//! task for each event its own poll produced. Here the queue reuses its
//! buffer, and the waker is taken out while the stream polls the turn, so
//! only pushes from elsewhere (the background checkpoint writer) wake it.
//!
//! It is never closed: the turn's end is the end of the stream's driver.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use looopy_core::AgentEvent;

/// A turn's undelivered events, and who to wake when one arrives: a
/// queue for a producer that mostly runs on its reader's task (see the
/// module docs). Its reader polls it with [`poll_pop`](Self::poll_pop),
/// or takes what is there with [`pop`](Self::pop).
#[derive(Default)]
pub(crate) struct EventQueue {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    events: VecDeque<AgentEvent>,
    /// Set only while the stream waits (it returned `Pending`).
    waker: Option<Waker>,
}

impl State {
    /// Remembers `waker` for the next push.
    fn wait(&mut self, waker: &Waker) {
        match &mut self.waker {
            Some(w) => w.clone_from(waker),
            None => self.waker = Some(waker.clone()),
        }
    }
}

impl EventQueue {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues an event and wakes the stream if it is waiting.
    pub(crate) fn push(&self, event: AgentEvent) {
        let waker = {
            let mut state = self.state();
            state.events.push_back(event);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Called before the stream polls the turn: what the turn pushes from
    /// inside that poll needs no wake-up.
    pub(crate) fn stop_waiting(&self) {
        self.state().waker = None;
    }

    /// The oldest event, without waiting.
    pub(crate) fn pop(&self) -> Option<AgentEvent> {
        self.state().events.pop_front()
    }

    /// The oldest event; otherwise `Pending`, and the next push wakes
    /// `waker` (checked and registered under one lock, so a push from
    /// another task in between is never missed).
    pub(crate) fn poll_pop(&self, waker: &Waker) -> Poll<AgentEvent> {
        let mut state = self.state();
        if let Some(event) = state.events.pop_front() {
            return Poll::Ready(event);
        }
        state.wait(waker);
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use looopy_core::{EventPayload, TaskState, TaskStatus};

    use super::*;

    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn event(n: u32) -> AgentEvent {
        AgentEvent::new(
            Arc::from(format!("t{n}")),
            Arc::from("c"),
            EventPayload::StatusUpdate {
                status: TaskStatus::new(TaskState::Working),
                is_final: false,
                metadata: Default::default(),
            },
        )
    }

    #[test]
    fn events_come_out_in_order_and_only_a_waiting_reader_is_woken() {
        let queue = EventQueue::default();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());

        // Nobody waits yet: pushing wakes nobody.
        queue.push(event(1));
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
        match queue.poll_pop(&waker) {
            Poll::Ready(e) => assert_eq!(&*e.task_id, "t1"),
            Poll::Pending => panic!("expected t1"),
        }

        // Empty: the reader waits, and the next push wakes it once.
        assert!(queue.poll_pop(&waker).is_pending());
        queue.push(event(2));
        queue.push(event(3));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);

        // The reader stopped waiting (it is polling the turn): no wake-up.
        queue.stop_waiting();
        assert!(queue.poll_pop(&waker).is_ready());
        queue.stop_waiting();
        queue.push(event(4));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        let rest: Vec<String> = std::iter::from_fn(|| queue.pop())
            .map(|e| e.task_id.to_string())
            .collect();
        assert_eq!(rest, ["t3", "t4"]);
    }
}
