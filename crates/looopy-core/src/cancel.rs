//! [`WhenCancelled`]: waiting for a [`CancellationToken`] at the cost of
//! an atomic operation per poll.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Finishes when its token is cancelled, as `token.cancelled()` does, but
/// is cheap to poll again.
///
/// The token's own future takes the token's lock, and its `Notify`'s, at
/// every poll. Raced against work in a `select!`, it is polled each time
/// the work is: once per streamed chunk of a model answer, once per event
/// of a stream. This one polls the token's future only when that future
/// woke it (and at its first poll); every other poll is an atomic swap and
/// a waker check.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use looopy_core::{CancellationToken, WhenCancelled};
///
/// let token = CancellationToken::new();
/// let work = async { 42 };
/// let answer = tokio::select! {
///     () = WhenCancelled::new(&token) => None,
///     n = work => Some(n),
/// };
/// assert_eq!(answer, Some(42));
///
/// token.cancel();
/// WhenCancelled::new(&token).await; // at once
/// # }
/// ```
#[must_use = "a future does nothing unless polled"]
pub struct WhenCancelled {
    /// The token's future; polled only with `relay`.
    inner: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Wakes this future's poller when the token's future wakes it.
    relay: Arc<Relay>,
    /// `relay` as a waker, made once.
    relay_waker: Waker,
    done: bool,
}

/// What the token's future wakes: a flag for "poll me again", and this
/// future's latest poller.
struct Relay {
    woken: AtomicBool,
    poller: AtomicWaker,
}

impl Wake for Relay {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.poller.wake();
    }
}

impl WhenCancelled {
    /// Waits for `token` (a clone of it is kept).
    pub fn new(token: &CancellationToken) -> Self {
        let relay = Arc::new(Relay {
            // The first poll polls the token's future.
            woken: AtomicBool::new(true),
            poller: AtomicWaker::new(),
        });
        WhenCancelled {
            inner: Box::pin(token.clone().cancelled_owned()),
            relay_waker: Waker::from(Arc::clone(&relay)),
            relay,
            done: false,
        }
    }
}

impl Future for WhenCancelled {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(());
        }
        // Registered before the flag is read: a wake in between is seen
        // either by the swap or by the poller it wakes.
        this.relay.poller.register(cx.waker());
        if this.relay.woken.swap(false, Ordering::AcqRel) {
            let mut relayed = Context::from_waker(&this.relay_waker);
            if this.inner.as_mut().poll(&mut relayed).is_ready() {
                this.done = true;
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}

impl std::fmt::Debug for WhenCancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhenCancelled")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn it_finishes_once_cancelled_and_wakes_its_latest_poller() {
        let token = CancellationToken::new();
        let mut wait = WhenCancelled::new(&token);
        let (first, second) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let first_waker = Waker::from(Arc::clone(&first));
        let second_waker = Waker::from(Arc::clone(&second));
        for _ in 0..3 {
            let poll = Pin::new(&mut wait).poll(&mut Context::from_waker(&first_waker));
            assert!(poll.is_pending());
        }
        // Polled last by another task: that one is woken.
        let poll = Pin::new(&mut wait).poll(&mut Context::from_waker(&second_waker));
        assert!(poll.is_pending());
        token.cancel();
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        let poll = Pin::new(&mut wait).poll(&mut Context::from_waker(&second_waker));
        assert!(poll.is_ready());
        assert!(
            Pin::new(&mut wait)
                .poll(&mut Context::from_waker(&second_waker))
                .is_ready()
        );
    }

    #[test]
    fn a_token_cancelled_before_the_first_poll_is_seen_at_once() {
        let token = CancellationToken::new();
        let child = token.child_token();
        token.cancel();
        let mut wait = WhenCancelled::new(&child);
        let waker = Waker::from(Arc::new(Count::default()));
        let poll = Pin::new(&mut wait).poll(&mut Context::from_waker(&waker));
        assert!(poll.is_ready());
    }

    #[tokio::test]
    async fn a_cancel_from_another_task_ends_the_wait() {
        let token = CancellationToken::new();
        let wait = WhenCancelled::new(&token);
        let cancel = token.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            cancel.cancel();
        });
        tokio::time::timeout(std::time::Duration::from_secs(5), wait)
            .await
            .expect("the cancel ends the wait");
    }
}
