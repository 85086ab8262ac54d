//! What the floor's and the library path's handlers share: a turn run on a
//! task of its own, its events sent as SSE `data:` lines, each a JSON-RPC
//! response with the request's id, topped up with status lines to as many
//! events as `looopy serve` sends.

use std::convert::Infallible;

use axum::body::Bytes;
use axum::response::sse::{Event, Sse};
use futures::channel::mpsc;
use serde_json::{Value, json};

/// The stream an [`SseTurn`] feeds.
pub(crate) type Events = mpsc::UnboundedReceiver<Result<Event, Infallible>>;

/// One turn's side of its SSE stream.
pub(crate) struct SseTurn {
    id: Value,
    pub(crate) task: String,
    pub(crate) context: String,
    tx: mpsc::UnboundedSender<Result<Event, Infallible>>,
    /// Events sent so far.
    pub(crate) sent: usize,
}

impl SseTurn {
    /// Sends `result` (JSON text) in the request's envelope.
    pub(crate) fn send(&mut self, result: &str) {
        let id = &self.id;
        let event = Event::default().data(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
        ));
        self.sent += 1;
        let _ = self.tx.unbounded_send(Ok(event));
    }

    /// Sends a status update in `state` (`last`: the final one).
    pub(crate) fn status(&mut self, state: &str, last: bool) {
        let status = json!({"statusUpdate": {"taskId": self.task, "contextId": self.context,
            "status": {"state": state, "timestamp": "2026-01-01T00:00:00Z"}, "final": last}});
        self.send(&status.to_string());
    }

    /// Sends `working` status updates until one event short of `events`
    /// (the final one comes last).
    pub(crate) fn top_up(&mut self, events: usize) {
        while self.sent + 1 < events {
            self.status("TASK_STATE_WORKING", false);
        }
    }
}

/// The SSE response to the JSON-RPC request `body`: `turn` sends its events
/// on a task of its own, starting with the `task` event.
pub(crate) fn spawn<F, Fut>(body: &Bytes, turn: F) -> Sse<Events>
where
    F: FnOnce(SseTurn) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let (tx, rx) = mpsc::unbounded();
    let mut sse = SseTurn {
        id: request["id"].clone(),
        task: uuid::Uuid::new_v4().to_string(),
        context: uuid::Uuid::new_v4().to_string(),
        tx,
        sent: 0,
    };
    let task = json!({"task": {"id": sse.task, "contextId": sse.context,
        "status": {"state": "TASK_STATE_SUBMITTED"}}});
    sse.send(&task.to_string());
    tokio::spawn(turn(sse));
    Sse::new(rx)
}
