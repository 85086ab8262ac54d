//! The library path: what a user gets from `AgentLoop` + `LiteLlmProvider`
//! alone, served the floor's way (an axum SSE handler). Each request runs one
//! loop turn on the same workload (streamed model calls, the same Rust
//! tools) and writes the turn's public events as JSON-RPC `data:` lines,
//! topped up with status lines to as many events as `looopy serve` sends.
//! Against it, `looopy serve`'s CPU per turn is what the A2A server, the
//! Agent and the stores add to the loop.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::routing::post;
use futures::StreamExt;
use futures::channel::mpsc;
use looopy_core::{History, Message, TurnContext};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_loop::{AgentLoop, InternalEvents, TurnSettings};
use serde_json::{Value, json};

use super::workload::NoopTools;

struct Library {
    agent: AgentLoop,
    /// Events per turn, as `looopy serve` sent them.
    events: usize,
}

/// A JSON-RPC envelope around an item already serialised.
fn envelope(id: &Value, result: &str) -> Result<Event, Infallible> {
    Ok(Event::default().data(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
    )))
}

async fn handle(
    State(library): State<Arc<Library>>,
    body: Bytes,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = request["id"].clone();
    let (tx, rx) = mpsc::unbounded();
    tokio::spawn(async move {
        let task = uuid::Uuid::new_v4().to_string();
        let context = uuid::Uuid::new_v4().to_string();
        let send = |event: Result<Event, Infallible>| tx.unbounded_send(event).is_ok();
        send(envelope(
            &id,
            &json!({"task": {"id": task, "contextId": context,
                "status": {"state": "TASK_STATE_SUBMITTED"}}})
            .to_string(),
        ));
        let mut sent = 1;
        // The public events only, as a library user serving the loop reads them.
        let settings = TurnSettings::new().with_internal_events(InternalEvents::NONE);
        let mut turn = library.agent.start_turn_with(
            History::from(vec![Message::user("go")]),
            TurnContext::new(task.clone(), context),
            settings,
        );
        let mut last = None;
        while let Some(event) = turn.next().await {
            if event.is_final() {
                last = Some(event);
                continue;
            }
            sent += 1;
            send(envelope(
                &id,
                &serde_json::to_string(&event).unwrap_or_default(),
            ));
        }
        while sent + 1 < library.events {
            sent += 1;
            send(envelope(
                &id,
                &json!({"statusUpdate": {"taskId": task,
                    "status": {"state": "TASK_STATE_WORKING"}}})
                .to_string(),
            ));
        }
        if let Some(last) = last {
            send(envelope(
                &id,
                &serde_json::to_string(&last).unwrap_or_default(),
            ));
        }
    });
    Sse::new(rx)
}

/// The library path's router, its loop calling the mock model at `base`.
pub(crate) fn router(base: &str, events: usize) -> Router {
    let provider = LiteLlmProvider::new(LiteLlmConfig::new(base, "bench-model")).expect("provider");
    let agent = AgentLoop::builder(provider)
        .system_prompt("bench")
        .tools(NoopTools)
        .build();
    Router::new()
        .route("/", post(handle))
        .with_state(Arc::new(Library { agent, events }))
}
