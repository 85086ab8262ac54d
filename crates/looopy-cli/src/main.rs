//! `looopy`: serve agents over A2A, chat with them, run one turn.

fn main() -> anyhow::Result<()> {
    let telemetry = looopy_cli::telemetry::Telemetry::init(
        &looopy_cli::telemetry::TelemetryConfig::from_env(),
    )?;
    telemetry.shutdown();
    Ok(())
}
