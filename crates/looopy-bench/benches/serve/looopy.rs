//! `looopy serve` itself: the binary's `App` from a `looopy.toml` (memory
//! store, the mock as its model) with the workload's Rust tools added, served
//! by `looopy_cli::serve::serve`, with the binary's telemetry set-up
//! (`Telemetry::init`, logs to stderr at `info`).

use std::sync::Arc;

use looopy_cli::app::App;
use looopy_cli::config::Config;
use looopy_cli::telemetry::{Telemetry, TelemetryConfig};

use super::workload::NoopTools;

/// Runs `looopy serve` on an ephemeral port until stdin closes; prints the
/// binary's "looopy listening on ..." line. `BENCH_TOML` is appended to its
/// `looopy.toml` (the soak bench sets the memory store's retention there).
/// `BENCH_MODEL` is its `[llm] model`: a bare name (the chat-completions
/// provider at `base`) by default, or a `provider:model` whose provider
/// then posts to `base` (`serve_providers`).
pub(crate) async fn serve(base: &str) {
    let _telemetry = Telemetry::init(&TelemetryConfig::from_env()).expect("telemetry");
    let model = std::env::var("BENCH_MODEL").unwrap_or_else(|_| "bench-model".into());
    let toml = format!(
        "[agent]\nname = \"bench\"\nsystem_prompt = \"bench\"\n\
         [llm]\nbase_url = \"{base}\"\nmodel = \"{model}\"\n{}",
        std::env::var("BENCH_TOML").unwrap_or_default()
    );
    let env = |k: &str| std::env::var(k).ok();
    let config = Config::parse(&toml).expect("config");
    let mut app = App::build(config, &env).await.expect("app");
    // What a library user adds to serve an agent with Rust tools.
    app.tools.push(Arc::new(NoopTools));
    looopy_cli::serve::serve(
        app,
        "127.0.0.1:0",
        &env,
        super::process::exit_when_stdin_closes(),
    )
    .await
    .expect("serve");
}
