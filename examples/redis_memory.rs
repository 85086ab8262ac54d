//! A conversation that outlives the process: an Agent on the Redis stores.
//! Each run is one turn; run it again with the same conversation id and the
//! model sees what was said before, whichever process said it.
//!
//! `LOOOPY_REDIS_URL=redis://127.0.0.1:6379 LOOOPY_LLM_BASE_URL=... LOOOPY_LLM_MODEL=... \
//!  cargo run -p looopy-examples --example redis_memory -- my-conversation "My name is Ada."`
//! then `... -- my-conversation "What is my name?"`.
use looopy::openai::LiteLlmProvider;
use looopy::prelude::*;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(conversation), Some(text)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: redis_memory <conversation id> <message>");
    };
    let url = std::env::var("LOOOPY_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = std::env::var("LOOOPY_REDIS_PREFIX").unwrap_or_else(|_| "looopy-example".into());
    let stores =
        looopy::stores::redis::connect(RedisConfig::new(url).with_key_prefix(prefix)).await?;

    let agent = Agent::builder(conversation)
        .llm(LiteLlmProvider::from_env()?)
        .system_prompt("You are a friendly assistant with a good memory.")
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .state_store(stores.agents.clone())
        .task_store(stores.checkpoints.clone())
        .turn_lock(stores.locks.clone()) // one turn at a time per conversation, across processes
        .build()?;
    let summary = agent
        .execute_turn(Some(Message::user(text)), None)
        .await?
        .finish()
        .await;
    let answer = summary.and_then(|s| s.message).map(|m| m.text());
    println!("answer: {}", answer.unwrap_or_default());
    println!("messages stored: {}", agent.messages().await?.len());
    agent.shutdown().await?;
    Ok(())
}
