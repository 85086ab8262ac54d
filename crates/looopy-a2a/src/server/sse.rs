//! Streams: a task's events as items ([`items`]) in the request's
//! version, each with its event log id, and their SSE form ([`respond`]):
//! each event the item in a JSON-RPC response (or bare, for HTTP+JSON),
//! with the log id as the SSE `id:` so that a client can resume after it
//! (`Last-Event-ID`).
//!
//! A stream follows the [`EventLog`](looopy_core::store::EventLog), not the
//! running turn: a client that goes away does not affect the task, and any
//! server process sharing the stores can serve the stream. The follower
//! runs in the response's own stream (no task of its own per stream).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt, stream};
use looopy_core::{CancellationToken, StoreError, WhenCancelled};
use serde_json::Value;

use crate::RpcError;
use crate::jsonrpc;
use crate::model::{StreamEvent, TaskSnapshot};
use crate::server::progress;
use crate::server::state::ServerState;
use crate::server::tasks::{Tasks, TurnReader};
use crate::version::ProtocolVersion;
use crate::wire::{self, StreamResult};

/// Events buffered between the log and a slow client.
const BUFFER: usize = 64;

/// A stream an operation opened, which each binding sends its own way.
pub(crate) enum Opened {
    /// A task's events from the log.
    Follow(Box<StreamSpec>),
    /// One item (a direct message reply), in the request's version.
    Single(StreamResult),
}

/// What to stream.
pub(crate) struct StreamSpec {
    pub(crate) version: ProtocolVersion,
    pub(crate) task_id: String,
    /// Follow the log after this id (`None`: from the start).
    pub(crate) after: Option<String>,
    /// Sent first, without an id (the task snapshot `SubscribeToTask` starts with).
    pub(crate) first: Option<TaskSnapshot>,
    /// Whether the request activated the tool-progress extension (otherwise
    /// its updates are left out).
    pub(crate) progress: bool,
    /// The task waits for input and `after` is its last event: the stream
    /// shows its next turn, once the client's answer starts it.
    pub(crate) next_turn: bool,
    /// The stream follows a turn running in this process (its own
    /// request's, or one it subscribed to): held until the turn's end is
    /// read, so that its chunks come as they came.
    pub(crate) reader: Option<TurnReader>,
}

/// How often a subscription to a task that waits for input looks for its
/// next turn (a log follow ends at once after a final event).
const NEXT_TURN_POLL: Duration = Duration::from_millis(200);

/// How often an idle stream gets a comment line, so that proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An SSE response whose frames are already in wire form. A comment line
/// goes out every [`KEEP_ALIVE`] whatever else is sent: a timer that ticks
/// on its own, where one reset after each event (axum's `KeepAlive`) takes
/// the runtime's timer lock for every event.
fn sse(frames: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    let mut frames = Box::pin(frames);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let body = stream::poll_fn(move |cx| {
        if let Poll::Ready(frame) = frames.as_mut().poll_next(cx) {
            return Poll::Ready(frame.map(Ok::<_, Infallible>));
        }
        tick.poll_tick(cx)
            .map(|_| Some(Ok(Bytes::from_static(b":\n\n"))))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// One SSE event: `data:` with `json` (one line: JSON text holds no raw
/// line breaks), then `id:` when given.
fn frame(json: impl FnOnce(&mut Vec<u8>), id: Option<&str>) -> Bytes {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"data: ");
    json(&mut out);
    out.push(b'\n');
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    Bytes::from(out)
}

fn data(value: &Value) -> Bytes {
    // Writing a `Value` cannot fail (its keys are strings).
    frame(|out| drop(serde_json::to_writer(out, value)), None)
}

/// An error as a stream item: a JSON-RPC error response, or the HTTP+JSON
/// error object.
fn error_item(envelope: Option<&Value>, e: &RpcError) -> Bytes {
    match envelope {
        Some(id) => data(&jsonrpc::failure(id, e)),
        None => data(&e.rest_body()),
    }
}

/// A stream with one item: the error (how 0.3 streaming methods report
/// errors: 0.3 clients read only SSE).
pub(crate) fn error(envelope: Option<&Value>, e: &RpcError) -> Response {
    let event = error_item(envelope, e);
    sse(stream::once(async move { event }))
}

/// One item of a stream: the stream result in the request's version, in
/// its typed form (or the error that ended the stream), and the log id it
/// came from (none for the snapshot a subscription starts with and for
/// single items).
pub(crate) struct Item {
    pub(crate) id: Option<String>,
    pub(crate) result: Result<StreamResult, RpcError>,
}

/// An opened stream as SSE; `envelope`: the JSON-RPC id items are wrapped
/// with (`None`: bare items, as the HTTP+JSON binding sends them). Each
/// item is serialised once, with its envelope, into the frame's data.
pub(crate) fn respond(state: &ServerState, opened: Opened, envelope: Option<Value>) -> Response {
    let to_event = move |item: Item| match &item.result {
        Ok(result) => frame(
            |out| result.write_frame(envelope.as_ref(), out),
            item.id.as_deref(),
        ),
        Err(e) => error_item(envelope.as_ref(), e),
    };
    match opened {
        Opened::Single(result) => {
            let event = to_event(Item {
                id: None,
                result: Ok(result),
            });
            sse(stream::once(async move { event }))
        }
        Opened::Follow(spec) => {
            let items = items(state.tasks.clone(), *spec, state.shutdown.clone());
            sse(items.map(to_event))
        }
    }
}

/// Follows a task's events in the log until its turn ends (or the server
/// shuts down, or the reader goes away).
///
/// The follower runs inside the returned stream, on whatever task polls it
/// (the connection's), not on a task of its own: a poll hands out what the
/// follower queued, and only once that is all out lets the follower go on.
/// Dropping the stream (the client went away) drops the follower; the turn
/// itself runs elsewhere and goes on.
pub(crate) fn items(
    tasks: Arc<Tasks>,
    spec: StreamSpec,
    shutdown: CancellationToken,
) -> impl Stream<Item = Item> + Send + 'static {
    let queue = Arc::new(Queue::default());
    let out = queue.clone();
    let follower: Follower = Box::pin(async move {
        // Polled again with every event: the cheap wait.
        let shutdown = WhenCancelled::new(&shutdown);
        tokio::select! {
            () = forward(&tasks, spec, &queue) => {}
            () = shutdown => {}
        }
    });
    let mut follower = Some(follower);
    stream::poll_fn(move |cx| {
        if let Some(item) = out.pop() {
            return Poll::Ready(Some(item));
        }
        let Some(running) = follower.as_mut() else {
            return Poll::Ready(None); // it ended and everything is out
        };
        // The queue is empty: let the follower go on in this poll, and hand
        // out what it queued at once.
        if running.as_mut().poll(cx).is_ready() {
            follower = None;
        }
        match out.pop() {
            Some(item) => Poll::Ready(Some(item)),
            None if follower.is_none() => Poll::Ready(None),
            None => Poll::Pending, // the log wakes this task when it has more
        }
    })
}

/// The future that follows the log for one stream.
type Follower = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The items a stream's follower has queued and the stream has not handed
/// out yet, at most [`BUFFER`].
///
/// The follower and the stream are polled by the same task, one after the
/// other, so the lock is never contended (it is there to make the queue
/// `Send`), and nothing needs waking: the stream polls the follower again
/// whenever the queue runs empty. A channel would add a block allocation
/// and atomic counts for each followed turn, for a hand-over that never
/// crosses tasks.
#[derive(Default)]
struct Queue(std::sync::Mutex<VecDeque<Item>>);

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Item>> {
        // A panic while the lock was held cannot leave the queue half
        // changed: take it as it is.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn pop(&self) -> Option<Item> {
        self.lock().pop_front()
    }

    /// Queues `item`, first waiting while the queue is full: the stream then
    /// hands out what it holds and polls the follower again once it is
    /// empty, so the wait needs no waker.
    async fn push(&self, item: Item) {
        let mut item = Some(item);
        std::future::poll_fn(|_| {
            let mut queue = self.lock();
            if queue.len() >= BUFFER {
                return Poll::Pending;
            }
            if let Some(item) = item.take() {
                queue.push_back(item);
            }
            Poll::Ready(())
        })
        .await;
    }
}

/// Waits until the log holds an event after `after` (the next turn of a
/// task that waits for input began). False when the log failed.
async fn next_turn_started(tasks: &Tasks, task_id: &str, after: Option<&str>) -> bool {
    let mut poll = tokio::time::interval(NEXT_TURN_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        poll.tick().await;
        match tasks.log.read(task_id, after, 1).await {
            Ok(events) if !events.is_empty() => return true,
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, task_id, "could not read the event log");
                return false;
            }
        }
    }
}

/// Queues the log's events of the current turn (and of the turns that
/// follow it while the client listens). Returns when a turn ends or the log
/// fails.
async fn forward(tasks: &Tasks, spec: StreamSpec, queue: &Queue) {
    let StreamSpec {
        version,
        task_id,
        mut after,
        first,
        progress,
        next_turn,
        mut reader,
    } = spec;
    if let Some(task) = first
        && let Some(result) = wire::stream_result(version, &StreamEvent::Task(task))
    {
        queue
            .push(Item {
                id: None,
                result: Ok(result),
            })
            .await;
    }
    if next_turn && !next_turn_started(tasks, &task_id, after.as_deref()).await {
        return;
    }
    loop {
        let mut final_id = None;
        {
            let mut events = tasks.log.follow(&task_id, after.clone());
            while let Some(next) = events.next().await {
                let stored = match next {
                    Ok(stored) => stored,
                    Err(e) => {
                        let e = match e {
                            StoreError::NotFound { .. } => RpcError::invalid_params(format!(
                                "Last-Event-ID: {e} (pass an id this server sent)"
                            )),
                            e => RpcError::internal(format!("event log: {e}")),
                        };
                        queue
                            .push(Item {
                                id: None,
                                result: Err(e),
                            })
                            .await;
                        return;
                    }
                };
                after = Some(stored.id.clone());
                if !progress && progress::is_progress(&stored.event) {
                    continue; // the client did not activate the extension
                }
                let Some(result) = wire::update_result(version, &stored.event) else {
                    continue; // internal events never leave
                };
                queue
                    .push(Item {
                        id: Some(stored.id.clone()),
                        result: Ok(result),
                    })
                    .await;
                if stored.event.is_final() {
                    // Only a task that waits for input can go on with a next
                    // turn; after any other end there is nothing to look up.
                    if stored.event.state().is_some_and(|s| !s.is_terminal()) {
                        final_id = Some(stored.id);
                    }
                    break;
                }
            }
        }
        // The turn its request started is read: its chunks may be compacted.
        drop(reader.take());
        // A turn ended. When the task went on with another turn right after
        // it (the client answered an input request), follow that one too.
        let Some(final_id) = final_id else { return };
        match tasks.store.get(&task_id).await {
            Ok(Some(r)) if r.turn_start_event_id.as_deref() == Some(final_id.as_str()) => {}
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    async fn next_frame(
        body: &mut (impl Stream<Item = Result<Bytes, axum::Error>> + Unpin),
    ) -> Bytes {
        body.next().await.unwrap().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_stream_gets_a_comment_every_keep_alive_period() {
        let response = sse(stream::pending());
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        let started = tokio::time::Instant::now();
        let mut body = response.into_body().into_data_stream();
        assert_eq!(next_frame(&mut body).await, ":\n\n");
        assert_eq!(started.elapsed(), KEEP_ALIVE);
        assert_eq!(next_frame(&mut body).await, ":\n\n");
        assert_eq!(started.elapsed(), 2 * KEEP_ALIVE);
    }

    #[tokio::test(start_paused = true)]
    async fn frames_go_out_as_they_come_and_the_body_ends_with_the_stream() {
        let event = frame(|out| out.extend_from_slice(br#"{"a":1}"#), Some("7"));
        assert_eq!(event, "data: {\"a\":1}\nid: 7\n\n");
        let started = tokio::time::Instant::now();
        let mut body = sse(stream::iter([event.clone(), data(&serde_json::json!(2))]))
            .into_body()
            .into_data_stream();
        assert_eq!(next_frame(&mut body).await, event);
        assert_eq!(next_frame(&mut body).await, "data: 2\n\n");
        assert!(body.next().await.is_none());
        assert_eq!(started.elapsed(), Duration::ZERO, "no timer held a frame");
    }
}
