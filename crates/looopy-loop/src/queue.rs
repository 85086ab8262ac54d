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
//! The Agent's turn stream is built on the same queue (the Agent's driver
//! runs on the reader's task too), with an [`EventSender`] that closes the
//! queue when the driver drops it, as a channel ends when its sender goes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use looopy_core::AgentEvent;

/// A turn's undelivered events, and who to wake when one arrives: a
/// queue for a producer that mostly runs on its reader's task (see the
/// module docs). Its reader polls it with [`poll_pop`](Self::poll_pop),
/// or takes what is there with [`pop`](Self::pop).
#[derive(Default)]
pub struct EventQueue {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    events: VecDeque<AgentEvent>,
    /// Set only while the stream waits (it returned `Pending`).
    waker: Option<Waker>,
    /// No more events will come (the [`EventSender`] was dropped).
    closed: bool,
}

impl State {
    /// Remembers `waker` for the next push or close.
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
    pub fn push(&self, event: AgentEvent) {
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
    pub fn pop(&self) -> Option<AgentEvent> {
        self.state().events.pop_front()
    }

    /// The oldest event; `Ready(None)` once the queue is closed and empty;
    /// otherwise `Pending`, and the next push (or the close) wakes `waker`
    /// (checked and registered under one lock, so a push from another task
    /// in between is never missed).
    pub fn poll_pop(&self, waker: &Waker) -> Poll<Option<AgentEvent>> {
        let mut state = self.state();
        if let Some(event) = state.events.pop_front() {
            return Poll::Ready(Some(event));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        state.wait(waker);
        Poll::Pending
    }

    /// No more events will come: a waiting reader is woken to see it.
    fn close(&self) {
        let waker = {
            let mut state = self.state();
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The producing end of an [`EventQueue`]: pushes events, and closes the
/// queue when dropped (also when its owner is dropped mid-turn), so that
/// the reader sees the end as it would a channel's.
pub struct EventSender(Arc<EventQueue>);

impl EventSender {
    /// The sender of `queue`.
    pub fn new(queue: Arc<EventQueue>) -> Self {
        EventSender(queue)
    }

    /// Queues an event (see [`EventQueue::push`]); drops it when the
    /// reader is gone (this sender holds the queue's last reference), as a
    /// channel with no receiver would, so that a turn that runs on after
    /// its stream was dropped keeps nothing.
    pub fn send(&self, event: AgentEvent) {
        if Arc::strong_count(&self.0) > 1 {
            self.0.push(event);
        }
    }
}

impl Drop for EventSender {
    fn drop(&mut self) {
        self.0.close();
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
            Poll::Ready(Some(e)) => assert_eq!(&*e.task_id, "t1"),
            other => panic!("expected t1, got {:?}", other.map(|e| e.map(|e| e.task_id))),
        }

        // Empty: the reader waits, and the next push wakes it once.
        assert!(queue.poll_pop(&waker).is_pending());
        queue.push(event(2));
        queue.push(event(3));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);

        // The reader stopped waiting (it is polling the turn): no wake-up.
        queue.stop_waiting();
        assert!(matches!(queue.poll_pop(&waker), Poll::Ready(Some(_))));
        queue.stop_waiting();
        queue.push(event(4));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        let rest: Vec<String> = std::iter::from_fn(|| queue.pop())
            .map(|e| e.task_id.to_string())
            .collect();
        assert_eq!(rest, ["t3", "t4"]);
    }

    #[test]
    fn a_dropped_sender_ends_the_queue_after_its_events_and_wakes_the_reader() {
        let queue = Arc::new(EventQueue::default());
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let sender = EventSender::new(queue.clone());

        assert!(queue.poll_pop(&waker).is_pending());
        sender.send(event(1));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(queue.poll_pop(&waker).is_ready());
        assert!(queue.poll_pop(&waker).is_pending());

        sender.send(event(2));
        drop(sender);
        // The close woke nobody new (the push had taken the waker), and the
        // event sent before it still comes out first.
        assert_eq!(counter.0.load(Ordering::SeqCst), 2);
        match queue.poll_pop(&waker) {
            Poll::Ready(Some(e)) => assert_eq!(&*e.task_id, "t2"),
            other => panic!("expected t2, got {:?}", other.map(|e| e.map(|e| e.task_id))),
        }
        assert!(matches!(queue.poll_pop(&waker), Poll::Ready(None)));
    }

    #[test]
    fn closing_wakes_a_waiting_reader() {
        let queue = Arc::new(EventQueue::default());
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let sender = EventSender::new(queue.clone());
        assert!(queue.poll_pop(&Waker::from(counter.clone())).is_pending());
        drop(sender);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(matches!(
            queue.poll_pop(&Waker::from(counter)),
            Poll::Ready(None)
        ));
    }

    #[test]
    fn events_sent_after_the_reader_is_gone_are_dropped() {
        let queue = Arc::new(EventQueue::default());
        let sender = EventSender::new(queue.clone());
        sender.send(event(1));
        let weak = Arc::downgrade(&queue);
        drop(queue);
        sender.send(event(2));
        let queue = weak.upgrade().expect("the sender holds it");
        assert_eq!(
            queue.pop().map(|e| e.task_id.to_string()).as_deref(),
            Some("t1")
        );
        assert!(queue.pop().is_none());
    }
}
