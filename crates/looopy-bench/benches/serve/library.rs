//! The library path: what a user gets from `AgentLoop` + `LiteLlmProvider`
//! alone, served the floor's way (an axum SSE handler). Each request runs one
//! loop turn on the same workload (streamed model calls, the same Rust
//! tools) and writes the turn's public events as JSON-RPC `data:` lines,
//! topped up with status lines to as many events as `looopy serve` sends.
//! Against it, `looopy serve`'s CPU per turn is what the A2A server, the
//! Agent and the stores add to the loop.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::Sse;
use axum::routing::post;
use futures::StreamExt;
use looopy_core::{History, Message, TurnContext};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_loop::{AgentLoop, InternalEvents, TurnSettings};

use super::sse_turn::{Events, SseTurn, spawn};
use super::workload::NoopTools;

struct Library {
    agent: AgentLoop,
    /// Events per turn, as `looopy serve` sent them.
    events: usize,
}

async fn handle(State(library): State<Arc<Library>>, body: Bytes) -> Sse<Events> {
    spawn(&body, move |mut sse: SseTurn| async move {
        // The public events only, as a library user serving the loop reads them.
        let settings = TurnSettings::new().with_internal_events(InternalEvents::NONE);
        let mut turn = library.agent.start_turn_with(
            History::from(vec![Message::user("go")]),
            TurnContext::new(sse.task.clone(), sse.context.clone()),
            settings,
        );
        let mut last = None;
        while let Some(event) = turn.next().await {
            if event.is_final() {
                last = Some(event);
                continue;
            }
            sse.send(&serde_json::to_string(&event).unwrap_or_default());
        }
        sse.top_up(library.events);
        if let Some(last) = last {
            sse.send(&serde_json::to_string(&last).unwrap_or_default());
        }
    })
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
