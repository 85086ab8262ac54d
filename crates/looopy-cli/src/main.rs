//! `looopy`: serve agents over A2A, chat with them, run one turn.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use looopy_cli::app::App;
use looopy_cli::config::Config;
use looopy_cli::telemetry::{Telemetry, TelemetryConfig};

/// mimalloc rather than the system allocator: a server runs thousands of
/// turns at once on a multi-threaded runtime, so memory taken on one
/// thread is often freed on another, where glibc's malloc contends on its
/// arena locks. Measured in `docs/performance.md` (10,000 sessions: 2.75x
/// the ideal wall time with glibc, 1.7x with mimalloc).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "looopy",
    version,
    about = "Looopy: tool-using LLM agents, served over A2A"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the configured agent over A2A (JSON-RPC + SSE).
    Serve {
        /// Configuration file (optional: without it, an agent with no model on the memory store).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Address to listen on (overrides [server] bind).
        #[arg(long)]
        bind: Option<String>,
    },
    /// Talk to an A2A agent interactively.
    Chat {
        /// The agent's base URL.
        url: String,
        /// Bearer token (or LOOOPY_TOKEN).
        #[arg(long, env = "LOOOPY_TOKEN", hide_env_values = true)]
        token: Option<String>,
    },
    /// Run one turn in-process and stream it to the terminal.
    Run {
        /// Configuration file.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// What to ask.
        prompt: String,
    },
}

fn load(path: Option<&PathBuf>) -> Result<Config> {
    let env = |k: &str| std::env::var(k).ok();
    let mut config = match path {
        Some(p) => Config::load(p)?,
        None => Config::parse("")?,
    };
    config.apply_env(&env);
    Ok(config)
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let telemetry = Telemetry::init(&TelemetryConfig::from_env())?;
    let env = |k: &str| std::env::var(k).ok();
    let result = match cli.command {
        Command::Serve { config, bind } => {
            let config = load(config.as_ref())?;
            let bind = bind.unwrap_or_else(|| config.server.bind.clone());
            let app = App::build(config, &env).await?;
            looopy_cli::serve::serve(app, &bind, &env, looopy_cli::serve::shutdown_signal()).await
        }
        Command::Chat { url, token } => looopy_cli::chat::chat(&url, token).await,
        Command::Run { config, prompt } => {
            let app = App::build(load(config.as_ref())?, &env).await?;
            looopy_cli::run::run(&app, &prompt).await.map(|_| ())
        }
    };
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await?;
    result
}
