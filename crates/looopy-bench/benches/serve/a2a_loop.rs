//! The A2A server without the Agent: looopy's `A2aServer` (its task records,
//! event log and SSE streams, on the memory stores) running each turn with
//! a `LoopRunner` over the library path's `AgentLoop`. Between the library
//! path and `looopy serve`, it tells what the A2A server adds to the loop
//! and what the Agent (leases, stored state, checkpoints, artifacts, the
//! window) adds to the A2A server.

use looopy_a2a::{A2aServer, LoopRunner};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_loop::AgentLoop;

use super::workload::NoopTools;

/// The server's router, its loop calling the mock model at `base`. Only the
/// public events are logged (no tool-progress extension), as for a client
/// of `looopy serve` that does not ask for it.
pub(crate) fn router(base: &str) -> axum::Router {
    let provider = LiteLlmProvider::new(LiteLlmConfig::new(base, "bench-model")).expect("provider");
    let agent = AgentLoop::builder(provider)
        .system_prompt("bench")
        .tools(NoopTools)
        .build();
    let stores = looopy_stores_memory::stores();
    let runner = LoopRunner::new(agent, stores.messages.clone());
    A2aServer::builder(runner, stores.events.clone(), stores.task_records.clone())
        .build()
        .router()
}
