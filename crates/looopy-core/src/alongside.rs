//! [`Alongside`]: a piece of work and a side task it carries with it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// Runs `work`, polling `side` beside it, on the same task, until
    /// `side` ends; the output is `work`'s (see [`alongside`]).
    ///
    /// A future of its own rather than an `async fn` with a `select!`: an
    /// `async fn` that takes a future by value keeps room for it in its
    /// state twice (the argument, then what it awaits), and the work
    /// wrapped here is a whole turn, which every running turn holds.
    #[must_use = "futures do nothing unless polled"]
    pub struct Alongside<W, S> {
        #[pin]
        work: W,
        // `None` when there is none, and once it ended.
        #[pin]
        side: Option<S>,
    }
}

/// `work`, with `side` (when there is one) polled beside it until `side`
/// ends: a lease renewed while a turn runs, a deadline that cancels it.
/// `work` is polled first, and its end ends `side`; when `side` ends,
/// `work` is polled again at once (what `side` did, a cancel say, may end
/// it), then alone.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use looopy_core::{CancellationToken, alongside};
///
/// let stop = CancellationToken::new();
/// let work = {
///     let stop = stop.clone();
///     async move {
///         stop.cancelled().await;
///         "stopped"
///     }
/// };
/// let side = async move { stop.cancel() };
/// assert_eq!(alongside(work, Some(side)).await, "stopped");
/// # }
/// ```
pub fn alongside<W: Future, S: Future<Output = ()>>(work: W, side: Option<S>) -> Alongside<W, S> {
    Alongside { work, side }
}

impl<W: Future, S: Future<Output = ()>> Future for Alongside<W, S> {
    type Output = W::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<W::Output> {
        let mut this = self.project();
        if let Poll::Ready(out) = this.work.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        if let Some(side) = this.side.as_mut().as_pin_mut()
            && side.poll(cx).is_ready()
        {
            this.side.set(None);
            return this.work.poll(cx);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_side_runs_until_it_ends_and_the_work_decides_the_end() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let side = async move {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let _ = tx.send(7);
        };
        // The work waits on what the side sends: the side must run beside it.
        let work = async move { rx.await.unwrap_or(0) + 1 };
        assert_eq!(alongside(work, Some(side)).await, 8);
    }

    #[tokio::test]
    async fn without_a_side_it_is_the_work() {
        assert_eq!(
            alongside(async { 3 }, None::<std::future::Ready<()>>).await,
            3
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_side_that_never_ends_stops_with_the_work() {
        let side = std::future::pending::<()>();
        let work = tokio::time::sleep(std::time::Duration::from_secs(5));
        alongside(work, Some(side)).await;
    }
}
