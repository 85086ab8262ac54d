//! The floor: an axum SSE handler that runs the bare reqwest loop for the
//! same workload and streams the same number of events as `looopy serve`
//! (JSON-RPC envelopes shaped like A2A 1.0 stream responses, built with
//! `json!` and written as `data:` lines). What the serving path would cost
//! with no framework at all.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::routing::post;
use futures::channel::mpsc;
use serde_json::{Value, json};

use super::workload::{Step, bare_turn, tools_json};

struct Floor {
    client: reqwest::Client,
    url: String,
    tools: Value,
    /// Events per turn, as `looopy serve` sent them.
    events: usize,
}

fn envelope(id: &Value, result: Value) -> Result<Event, Infallible> {
    Ok(Event::default().data(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()))
}

fn status(task: &str, context: &str, state: &str, last: bool) -> Value {
    json!({"statusUpdate": {"taskId": task, "contextId": context,
        "status": {"state": state, "timestamp": "2026-01-01T00:00:00Z"}, "final": last}})
}

async fn handle(
    State(floor): State<Arc<Floor>>,
    body: Bytes,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = request["id"].clone();
    let (tx, rx) = mpsc::unbounded();
    tokio::spawn(async move {
        let task = uuid::Uuid::new_v4().to_string();
        let context = uuid::Uuid::new_v4().to_string();
        let send = |result: Value| tx.unbounded_send(envelope(&id, result)).is_ok();
        send(json!({"task": {"id": task, "contextId": context,
            "status": {"state": "TASK_STATE_SUBMITTED"}}}));
        send(status(&task, &context, "TASK_STATE_WORKING", false));
        let mut sent = 2;
        let mut emit = |step: Step| {
            if let Step::Text(text) = step {
                // The first chunk creates the artifact, the others append.
                let append = sent > 2;
                sent += 1;
                send(
                    json!({"artifactUpdate": {"taskId": task, "contextId": context,
                    "artifact": {"artifactId": "answer", "parts": [{"text": text}]}, "append": append}}),
                );
            }
        };
        bare_turn(&floor.client, &floor.url, &floor.tools, &mut emit).await;
        while sent + 1 < floor.events {
            sent += 1;
            send(status(&task, &context, "TASK_STATE_WORKING", false));
        }
        send(status(&task, &context, "TASK_STATE_COMPLETED", true));
    });
    Sse::new(rx)
}

/// The floor's router, calling the mock model at `base`.
pub(crate) fn router(base: &str, events: usize) -> Router {
    let floor = Floor {
        client: reqwest::Client::new(),
        url: format!("{base}/chat/completions"),
        tools: tools_json(),
        events,
    };
    Router::new()
        .route("/", post(handle))
        .with_state(Arc::new(floor))
}
