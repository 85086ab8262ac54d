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

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt, stream};
use looopy_core::{CancellationToken, StoreError};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::RpcError;
use crate::jsonrpc;
use crate::model::{StreamEvent, TaskSnapshot};
use crate::server::dispatch::Opened;
use crate::server::tasks::Tasks;
use crate::server::{ServerState, progress, rest};
use crate::version::ProtocolVersion;
use crate::wire::{self, StreamResult};

/// Events buffered between the log and a slow client.
const BUFFER: usize = 64;

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
}

/// How often a subscription to a task that waits for input looks for its
/// next turn (a log follow ends at once after a final event).
const NEXT_TURN_POLL: Duration = Duration::from_millis(200);

fn sse(events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static) -> Response {
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn data(value: &Value) -> Event {
    Event::default().data(value.to_string())
}

/// An error as a stream item: a JSON-RPC error response, or the HTTP+JSON
/// error object.
fn error_item(envelope: Option<&Value>, e: &RpcError) -> Event {
    match envelope {
        Some(id) => data(&jsonrpc::failure(id, e)),
        None => data(&rest::error_body(e)),
    }
}

/// A stream with one item: the error (how 0.3 streaming methods report
/// errors: 0.3 clients read only SSE).
pub(crate) fn error(envelope: Option<&Value>, e: &RpcError) -> Response {
    let event = error_item(envelope, e);
    sse(stream::once(async move { Ok(event) }))
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
    let to_event = move |item: Item| {
        let event = match &item.result {
            Ok(result) => Event::default().data(result.frame(envelope.as_ref())),
            Err(e) => error_item(envelope.as_ref(), e),
        };
        match item.id {
            Some(id) => event.id(id),
            None => event,
        }
    };
    match opened {
        Opened::Single(result) => {
            let event = to_event(Item {
                id: None,
                result: Ok(result),
            });
            sse(stream::once(async move { Ok(event) }))
        }
        Opened::Follow(spec) => {
            let items = items(state.tasks.clone(), *spec, state.shutdown.clone());
            sse(items.map(move |item| Ok::<_, Infallible>(to_event(item))))
        }
    }
}

/// Follows a task's events in the log until its turn ends (or the server
/// shuts down, or the reader goes away).
///
/// The follower runs inside the returned stream, on whatever task polls it
/// (the connection's), not on a task of its own: each poll first takes what
/// it queued, then lets it go on. Dropping the stream (the client went
/// away) drops the follower; the turn itself runs elsewhere and goes on.
pub(crate) fn items(
    tasks: Arc<Tasks>,
    spec: StreamSpec,
    shutdown: CancellationToken,
) -> impl Stream<Item = Item> + Send + 'static {
    let (tx, rx) = mpsc::channel::<Item>(BUFFER);
    let follower: Follower = Box::pin(async move {
        tokio::select! {
            () = forward(&tasks, spec, &tx) => {}
            () = shutdown.cancelled() => {}
        }
    });
    stream::unfold((rx, Some(follower)), |(mut rx, mut follower)| async move {
        loop {
            let Some(running) = follower.as_mut() else {
                // The follower ended: what it queued is all there is.
                return rx.recv().await.map(|item| (item, (rx, None)));
            };
            tokio::select! {
                biased;
                item = rx.recv() => return item.map(|item| (item, (rx, follower))),
                () = running => follower = None,
            }
        }
    })
}

/// The future that follows the log for one stream.
type Follower = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Waits until the log holds an event after `after` (the next turn of a
/// task that waits for input began). False when the client went away or
/// the log failed.
async fn next_turn_started(
    tasks: &Tasks,
    task_id: &str,
    after: Option<&str>,
    tx: &mpsc::Sender<Item>,
) -> bool {
    let mut poll = tokio::time::interval(NEXT_TURN_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = poll.tick() => {}
            () = tx.closed() => return false,
        }
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

/// Sends the log's events of the current turn (and of the turns that follow
/// it while the client listens) to `tx`. Returns when a turn ends, the
/// client goes away or the log fails.
async fn forward(tasks: &Tasks, spec: StreamSpec, tx: &mpsc::Sender<Item>) {
    let StreamSpec {
        version,
        task_id,
        mut after,
        first,
        progress,
        next_turn,
    } = spec;
    if let Some(task) = first
        && let Some(result) = wire::stream_result(version, &StreamEvent::Task(task))
        && tx
            .send(Item {
                id: None,
                result: Ok(result),
            })
            .await
            .is_err()
    {
        return;
    }
    if next_turn && !next_turn_started(tasks, &task_id, after.as_deref(), tx).await {
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
                        let _ = tx
                            .send(Item {
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
                let event = Item {
                    id: Some(stored.id.clone()),
                    result: Ok(result),
                };
                if tx.send(event).await.is_err() {
                    return; // the client went away; the task goes on
                }
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
        // A turn ended. When the task went on with another turn right after
        // it (the client answered an input request), follow that one too.
        let Some(final_id) = final_id else { return };
        match tasks.store.get(&task_id).await {
            Ok(Some(r)) if r.turn_start_event_id.as_deref() == Some(final_id.as_str()) => {}
            _ => return,
        }
    }
}
