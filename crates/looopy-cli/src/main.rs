//! `looopy`: serve agents over A2A, chat with them, run one turn.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use looopy_cli::app::App;
use looopy_cli::config::Config;
use looopy_cli::telemetry::{Telemetry, TelemetryConfig};
use looopy_stores::StoreConfig;

/// mimalloc rather than the system allocator: a server runs thousands of
/// turns at once on a multi-threaded runtime, so memory taken on one
/// thread is often freed on another, where glibc's malloc contends on its
/// arena locks. Its 2.x line (the workspace enables the crate's `v2`
/// feature) spends less CPU and memory per served turn than 3.x. Without
/// transparent huge pages (`no_thp`), so that a burst of turns does not
/// fault a growing heap in huge pages at a time. The measurements are in
/// `docs/performance.md` (design decisions).
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
    /// Show logs on the terminal (-v: info, -vv: debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the configured agent over A2A (JSON-RPC + SSE).
    Serve {
        /// Configuration file (optional: without it, an agent with no model
        /// whose conversations are kept in `.looopy/looopy.db`).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Address to listen on (overrides `bind` in the configuration's server table).
        #[arg(long)]
        bind: Option<String>,
        /// The model, as `provider:model` (gemini:gemini-2.5-flash, openai:gpt-4.1,
        /// openai-chat:gpt-4o-mini, litellm:NAME), over `[llm] model`.
        #[arg(long)]
        model: Option<String>,
        /// Where conversations are kept (overrides the configuration's
        /// `[store]` table): `sqlite` (`.looopy/looopy.db`, the default
        /// without a table) or `memory` (they end with the process).
        #[arg(long, value_enum)]
        store: Option<StoreFlag>,
    },
    /// Serve the configured agent over MCP on stdin and stdout, for desktop
    /// clients and IDEs that start their MCP servers as processes.
    Mcp {
        /// Configuration file (optional, as for `serve`).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The model, as `provider:model`, over `[llm] model`.
        #[arg(long)]
        model: Option<String>,
        /// Where conversations are kept, as for `serve`.
        #[arg(long, value_enum)]
        store: Option<StoreFlag>,
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
        /// The model, as `provider:model` (gemini:gemini-2.5-flash, openai:gpt-4.1,
        /// openai-chat:gpt-4o-mini, litellm:NAME), over `[llm] model`.
        #[arg(long)]
        model: Option<String>,
        /// What to ask.
        prompt: String,
    },
    /// Run a dataset of cases against the configured agent and check
    /// each answer (exit status 1 when a case fails).
    Eval {
        /// The dataset: TOML (`[[cases]]` tables) or JSON Lines (`.jsonl`).
        cases: PathBuf,
        /// Configuration file (the agent is built as `serve` builds it,
        /// with its conversations in memory).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The model, as `provider:model`, over `[llm] model`.
        #[arg(long)]
        model: Option<String>,
        /// Cases run at once.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Write JUnit XML here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Write the HTML report here.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Write the run as JSON here (for a later `--baseline`).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Compare with an earlier run's JSON, case by case.
        #[arg(long)]
        baseline: Option<PathBuf>,
    },
    /// Show a turn's execution record (model calls, tool calls, retries,
    /// compaction, recovery, with durations), read from a server.
    Record {
        /// The task of the turn.
        task_id: String,
        /// The turn's number (in its conversation); the task's latest turn
        /// when not given.
        #[arg(long)]
        turn: Option<u64>,
        /// The server's base URL.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        /// Bearer token (or LOOOPY_TOKEN).
        #[arg(long, env = "LOOOPY_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Print the record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a recorded turn again with the agent the configuration builds
    /// now (its model, prompt and tools) and show what changed: the model
    /// answers step by step, tool calls added or missing, the final
    /// answers. Exit status 0 when it did the same, 1 when it differs, 2
    /// when it could not replay.
    Replay {
        /// The task of the recorded turn.
        task_id: String,
        /// Configuration file: the agent replayed, and (without `--record`
        /// or `--url`) the store the record is read from, the one `serve`
        /// uses.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The model, as `provider:model`, over `[llm] model`.
        #[arg(long)]
        model: Option<String>,
        /// Read the record from this file (what `looopy record --json`
        /// prints) instead of the store.
        #[arg(long, value_name = "FILE", conflicts_with = "url")]
        record: Option<PathBuf>,
        /// Read the record from this server, as `looopy record` does.
        #[arg(long)]
        url: Option<String>,
        /// Bearer token for `--url` (or LOOOPY_TOKEN).
        #[arg(long, env = "LOOOPY_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Run the tools instead of answering them from the record.
        #[arg(long)]
        live_tools: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `looopy serve --store`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum StoreFlag {
    /// A SQLite database under `.looopy/` in the working directory.
    Sqlite,
    /// This process's memory.
    Memory,
}

/// The file (or nothing), the `LOOOPY_LLM_*` variables over it, `--model`
/// over both, checked.
fn load(path: Option<&PathBuf>, model: Option<&str>) -> Result<Config> {
    let env = |k: &str| std::env::var(k).ok();
    let mut config = match path {
        Some(p) => Config::load(p)?,
        None => Config::parse("")?,
    };
    config.apply_env(&env);
    if let Some(model) = model {
        config.set_model(model);
    }
    config.check_llm()?;
    Ok(config)
}

/// The store of a served agent: `--store` over the configuration's
/// `[store]` table, and SQLite under `.looopy/` without either.
fn served(mut config: Config, store: Option<StoreFlag>) -> Config {
    config.store = match (store, config.store.take()) {
        (Some(StoreFlag::Memory), _) => Some(StoreConfig::Memory(Default::default())),
        // A configured SQLite file keeps its path and knobs.
        (Some(StoreFlag::Sqlite), Some(sqlite @ StoreConfig::Sqlite(_))) => Some(sqlite),
        (Some(StoreFlag::Sqlite), _) | (None, None) => Some(Config::serve_default_store()),
        (None, Some(configured)) => Some(configured),
    };
    config
}

/// What the terminal shows when RUST_LOG is unset: a server logs what it
/// does; `run` and `chat` print the conversation and keep logs out of the
/// way (a failed turn is already said in one line).
fn console_filter(command: &Command, verbose: u8) -> &'static str {
    match (command, verbose) {
        (_, 2..) => "debug",
        (Command::Serve { .. }, _) | (_, 1) => "info",
        _ => "off",
    }
}

async fn execute(command: Command) -> Result<()> {
    let env = |k: &str| std::env::var(k).ok();
    match command {
        Command::Serve {
            config,
            bind,
            model,
            store,
        } => {
            let config = served(load(config.as_ref(), model.as_deref())?, store);
            let bind = bind.unwrap_or_else(|| config.server.bind.clone());
            let app = App::build(config, &env).await?;
            looopy_cli::serve::serve(app, &bind, &env, looopy_cli::serve::shutdown_signal()).await
        }
        Command::Mcp {
            config,
            model,
            store,
        } => {
            let config = served(load(config.as_ref(), model.as_deref())?, store);
            let app = App::build(config, &env).await?;
            looopy_cli::mcp::serve_stdio(&app).await
        }
        Command::Chat { url, token } => looopy_cli::chat::chat(&url, token).await,
        Command::Record {
            task_id,
            turn,
            url,
            token,
            json,
        } => {
            let record =
                looopy_cli::record::fetch_turn(&url, &task_id, turn, token.as_deref()).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&record)?);
            } else {
                print!("{}", looopy_cli::record::render(&record));
            }
            Ok(())
        }
        Command::Replay {
            task_id,
            config,
            model,
            record,
            url,
            token,
            live_tools,
            json,
        } => {
            let config = load(config.as_ref(), model.as_deref())?;
            let source = match (record, url) {
                (Some(file), _) => looopy_cli::replay::RecordSource::File(file),
                (None, Some(url)) => looopy_cli::replay::RecordSource::Server { url, token },
                (None, None) => looopy_cli::replay::RecordSource::Store(
                    served(config.clone(), None).store().into_owned(),
                ),
            };
            let recorded = looopy_cli::replay::load_record(&source, &task_id).await?;
            let mut config = config;
            // The replay's conversation is thrown away.
            config.store = Some(StoreConfig::Memory(Default::default()));
            let app = App::build(config, &env).await?;
            looopy_cli::replay::run(&app, &recorded, live_tools, json).await
        }
        Command::Run {
            config,
            model,
            prompt,
        } => {
            let app = App::build(load(config.as_ref(), model.as_deref())?, &env).await?;
            looopy_cli::run::run(&app, &prompt).await?;
            Ok(())
        }
        Command::Eval {
            cases,
            config,
            model,
            concurrency,
            junit,
            html,
            json,
            baseline,
        } => {
            let mut config = load(config.as_ref(), model.as_deref())?;
            // Each case is a new conversation nobody comes back to.
            config.store = Some(StoreConfig::Memory(Default::default()));
            let app = App::build(config, &env).await?;
            let args = looopy_cli::eval::EvalArgs {
                cases,
                concurrency,
                junit,
                html,
                json,
                baseline,
            };
            if looopy_cli::eval::eval(&app, &args, &env).await? {
                Ok(())
            } else {
                anyhow::bail!("some cases failed")
            }
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let config =
        TelemetryConfig::from_env().console_filter(console_filter(&cli.command, cli.verbose));
    let telemetry = match Telemetry::init(&config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("looopy: {e}");
            return ExitCode::FAILURE;
        }
    };
    // `replay` tells a difference (1) from a failure (2).
    let replay = matches!(cli.command, Command::Replay { .. });
    let result = execute(cli.command).await;
    let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the error and its causes, no backtrace.
            eprintln!("looopy: {e:#}");
            match (replay, e.is::<looopy_cli::replay::Differs>()) {
                (true, true) | (false, _) => ExitCode::FAILURE,
                (true, false) => ExitCode::from(2),
            }
        }
    }
}
