//! A typed final answer: the schema of `Trip` goes to the model as a strict
//! `response_format`; an answer that does not read is sent back with what
//! was wrong (at most twice).
//!
//! `LOOOPY_LLM_BASE_URL=... LOOOPY_LLM_MODEL=... cargo run -p looopy-examples --example structured`
//! (set `LOOOPY_LLM_NATIVE_SCHEMA=0` for an endpoint without `json_schema` support).
use looopy::openai::{LiteLlmConfig, LiteLlmProvider};
use looopy::prelude::*;
use serde::Deserialize;

/// A trip plan.
#[derive(Debug, Deserialize, JsonSchema)]
struct Trip {
    /// Where to.
    destination: String,
    /// How many days.
    days: u32,
    /// What to pack.
    packing_list: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let native = std::env::var("LOOOPY_LLM_NATIVE_SCHEMA").map_or(true, |v| v != "0");
    let config = LiteLlmConfig::from_env()?.with_native_structured_output(native);
    let agent = AgentLoop::builder(LiteLlmProvider::new(config)?)
        .system_prompt("You plan short trips.")
        .llm_layer(ResponseFormatLayer) // puts the turn's schema on each model call
        .build();
    let history = History::from(vec![Message::user("A weekend in Lisbon, please.")]);
    let turn = agent
        .run_structured::<Trip>(history, TurnContext::new("task-1", "context-1"))
        .await?;
    let trip = turn.value;
    println!(
        "{} for {} days, pack: {}",
        trip.destination,
        trip.days,
        trip.packing_list.join(", ")
    );
    println!("attempts: {}", turn.attempts);
    Ok(())
}
