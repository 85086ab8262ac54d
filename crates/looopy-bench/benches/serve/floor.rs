//! The floor: an axum SSE handler that runs the bare reqwest loop for the
//! same workload and streams the same number of events as `looopy serve`
//! (JSON-RPC envelopes shaped like A2A 1.0 stream responses, built with
//! `json!` and written as `data:` lines). What the serving path would cost
//! with no framework at all.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::Sse;
use axum::routing::post;
use serde_json::{Value, json};

use super::sse_turn::{Events, SseTurn, spawn};
use super::workload::{Step, bare_turn, tools_json};

struct Floor {
    client: reqwest::Client,
    url: String,
    tools: Value,
    /// Events per turn, as `looopy serve` sent them.
    events: usize,
}

async fn handle(State(floor): State<Arc<Floor>>, body: Bytes) -> Sse<Events> {
    spawn(&body, move |mut sse: SseTurn| async move {
        sse.status("TASK_STATE_WORKING", false);
        let mut emit = |step: Step| {
            if let Step::Text(text) = step {
                // The first chunk creates the artifact, the others append.
                let append = sse.sent > 2;
                let update = json!({"artifactUpdate": {"taskId": sse.task,
                    "contextId": sse.context, "artifact": {"artifactId": "answer",
                    "parts": [{"text": text}]}, "append": append}});
                sse.send(&update.to_string());
            }
        };
        bare_turn(&floor.client, &floor.url, &floor.tools, &mut emit).await;
        sse.top_up(floor.events);
        sse.status("TASK_STATE_COMPLETED", true);
    })
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
