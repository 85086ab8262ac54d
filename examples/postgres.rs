//! A conversation kept in PostgreSQL: an Agent on the PostgreSQL stores,
//! with the turn store that ends each turn in one transaction. Each run is
//! one turn; run it again with the same conversation id and the model sees
//! what was said before, whichever process (or replica) said it. The schema
//! is created and migrated on the first run.
//!
//! `LOOOPY_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!  LOOOPY_LLM_BASE_URL=... LOOOPY_LLM_MODEL=... \
//!  cargo run -p looopy-examples --example postgres -- my-conversation "My name is Ada."`
//! then `... -- my-conversation "What is my name?"`.
use looopy::openai::LiteLlmProvider;
use looopy::prelude::*;
use looopy::stores::postgres::PostgresConfig;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(conversation), Some(text)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: postgres <conversation id> <message>");
    };
    let url = std::env::var("LOOOPY_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let schema =
        std::env::var("LOOOPY_POSTGRES_SCHEMA").unwrap_or_else(|_| "looopy_example".into());
    let stores =
        looopy::stores::postgres::connect(PostgresConfig::new(url).with_schema(schema)).await?;

    let agent = Agent::builder(conversation)
        .llm(LiteLlmProvider::from_env()?)
        .system_prompt("You are a friendly assistant with a good memory.")
        .stores(&stores) // every store, and the one-transaction turn store
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
