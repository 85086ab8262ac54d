//! `looopy serve`: the agent over A2A (JSON-RPC + SSE, v1.0 and v0.3), and
//! over MCP at `/mcp`.

use std::future::Future;

use anyhow::{Context, Result};
use looopy_a2a::{A2aServer, AgentCardConfig, AgentRunner, AuthConfig};
use looopy_core::CancellationToken;
use looopy_stores::StoreConfig;
use tokio::net::TcpListener;

use crate::app::App;
use crate::telemetry::LogFormat;

/// Builds the server of an [`App`]: an Agent per context, the event log and
/// task records from the configured stores, the agent card, the tokens.
///
/// MCP is served at [`MCP_PATH`](crate::mcp::MCP_PATH) beside A2A, behind
/// the same tokens; its sessions end when `mcp_shutdown` is cancelled.
pub fn server(
    app: &App,
    env: &dyn Fn(&str) -> Option<String>,
    public_url: &str,
    mcp_shutdown: CancellationToken,
) -> Result<A2aServer> {
    let config = &app.config;
    let mut auth = AuthConfig::none();
    for token in &config.auth.tokens {
        auth = auth.bearer(token.resolve(env)?, token.principal.clone());
    }
    let card = config.agent.skills.iter().fold(
        AgentCardConfig::new(config.agent.name.clone(), config.agent.description.clone())
            .version(env!("CARGO_PKG_VERSION"))
            .public_url(public_url),
        |card, skill| card.skill(skill.card_skill()),
    );
    let push = config.push.settings();
    // Each new conversation's Agent shares the loop, its layers and tools.
    let template = app.agent_template()?;
    let mcp = crate::mcp::AgentMcpServer::new(template.clone(), &config.agent);
    let runner =
        AgentRunner::new(move |context_id, owner| template.agent_owned_by(context_id, owner))
            .max_cached(agents_cached(&config.store()));
    let builder = A2aServer::with_stores(runner, &app.stores)
        .card(card)
        .auth(auth)
        .max_body_bytes(config.server.max_body_bytes)
        .recovery_scan_interval(config.durability.scan_interval())
        .web_ui(true) // the chat page at GET / (docs/web.md)
        // Cost estimates beside each served execution record.
        .prices(crate::eval::price_table(config)?)
        .routes(crate::mcp::http_routes(
            mcp,
            mcp_shutdown,
            public_url,
            config.server.max_body_bytes,
        ))
        .routes(crate::prompts::routes(app.references.clone()));
    let builder = match config.server.card_default_version {
        Some(version) => builder.card_default_version(version),
        None => builder,
    };
    let builder = match push {
        Some(settings) => builder.push_notifications(app.stores.push_configs.clone(), settings),
        None => builder,
    };
    Ok(builder.build())
}

/// How many idle Agents the runner keeps between turns: 1,024, or fewer
/// when the memory store keeps fewer conversations (an Agent kept for a
/// conversation the store has let go would only hold memory; the next turn
/// of it builds one again).
fn agents_cached(store: &StoreConfig) -> usize {
    const AGENTS_CACHED: usize = 1024;
    match store {
        StoreConfig::Memory(retention) => retention
            .cap()
            .map_or(AGENTS_CACHED, |n| n.min(AGENTS_CACHED)),
        _ => AGENTS_CACHED,
    }
}

/// Serves until `shutdown` completes; running turns get a grace period to
/// finish (and checkpoint) before they are cancelled.
pub async fn serve(
    app: App,
    bind: &str,
    env: &dyn Fn(&str) -> Option<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let listener = TcpListener::bind(bind)
        .await
        .with_context(|| format!("binding {bind}"))?;
    let addr = listener.local_addr()?;
    let public_url = app
        .config
        .server
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    let mcp_shutdown = CancellationToken::new();
    let server = server(&app, env, &public_url, mcp_shutdown.clone())?;
    let shutdown = async move {
        shutdown.await;
        mcp_shutdown.cancel();
    };
    tracing::info!(%addr, agent = %app.config.agent.name, "looopy serving A2A at {public_url}");
    // A line on stdout that scripts (and tests) can wait for; the banner
    // for people goes to stderr, with the logs.
    println!("looopy listening on http://{addr}");
    match LogFormat::from_vars(env) {
        LogFormat::Human => eprint!("{}", crate::banner::banner(&app.config, &public_url)),
        // Every line on stderr is then a JSON log line: the banner is one too.
        LogFormat::Json => crate::banner::log(&app.config, &public_url),
    }
    server.serve(listener, shutdown).await.context("serving")?;
    tracing::info!("looopy stopped");
    Ok(())
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
    tracing::info!("shutdown requested");
}

#[cfg(test)]
mod tests {
    use looopy_stores::{MemoryRetention, StoreConfig};

    use super::agents_cached;

    fn memory(max_entries: usize) -> StoreConfig {
        StoreConfig::Memory(MemoryRetention {
            max_entries,
            ..MemoryRetention::default()
        })
    }

    #[test]
    fn the_runner_keeps_no_more_agents_than_the_memory_store_keeps_conversations() {
        assert_eq!(agents_cached(&memory(100)), 100);
        assert_eq!(agents_cached(&memory(10_000)), 1024);
        // No cap on the store: the runner's own limit.
        assert_eq!(agents_cached(&memory(0)), 1024);
    }
}
