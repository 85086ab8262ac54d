//! `looopy replay <task-id>`: runs a recorded turn again with the agent the
//! configuration builds now ([`looopy::eval::replay`]) and prints what
//! changed. The record comes from the store `looopy serve` keeps its state
//! in, from a server (`--url`, as `looopy record` reads it) or from a file
//! of `looopy record --json` (`--record`).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use looopy::eval::{ReplayOptions, ReplayReport, replay};
use looopy_core::record::ExecutionRecord;
use looopy_stores::StoreConfig;

use crate::app::App;

/// Where the record to replay comes from.
#[derive(Debug, Clone)]
pub enum RecordSource {
    /// The record store of these stores (the configured ones).
    Store(StoreConfig),
    /// A server's `GET /v1/tasks/{id}/record`, with this bearer token.
    Server {
        /// The server's base URL.
        url: String,
        /// The bearer token.
        token: Option<String>,
    },
    /// A file holding the JSON `looopy record --json` prints.
    File(PathBuf),
}

/// The replay differs from the record: `looopy replay` exits with 1.
#[derive(Debug, thiserror::Error)]
#[error("the replay differs from the record")]
pub struct Differs;

/// Reads the record of `task_id` from `source`.
pub async fn load_record(source: &RecordSource, task_id: &str) -> Result<ExecutionRecord> {
    match source {
        RecordSource::File(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the record {}", path.display()))?;
            let record: ExecutionRecord = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not an execution record (the JSON of `looopy record --json`)",
                    path.display()
                )
            })?;
            if record.task_id != task_id {
                bail!(
                    "{} is the record of task {}, not of task {task_id}",
                    path.display(),
                    record.task_id
                );
            }
            Ok(record)
        }
        RecordSource::Server { url, token } => {
            crate::record::fetch(url, task_id, token.as_deref()).await
        }
        RecordSource::Store(config) => {
            let stores = config.build().await.context("connecting to the stores")?;
            let Some(records) = stores.records else {
                bail!(
                    "the configured store keeps no execution records: give --record FILE \
                     (what `looopy record --json` prints) or --url of the server"
                );
            };
            records
                .get(task_id)
                .await
                .context("reading the execution record")?
                .with_context(|| format!("the configured store has no record of task {task_id}"))
        }
    }
}

/// Replays `record` with the agent of `app` (its stores are not used: the
/// replay runs in a conversation in memory) and prints the report, as
/// JSON with `json`. Returns [`Differs`] as the error when it differs.
pub async fn run(app: &App, record: &ExecutionRecord, live_tools: bool, json: bool) -> Result<()> {
    let options = ReplayOptions {
        live_tools,
        ..ReplayOptions::default()
    };
    let report: ReplayReport = replay(record, app.agent_builder(), &options)
        .await
        .context("replaying the turn")?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.diff());
    }
    if report.is_same() {
        Ok(())
    } else {
        Err(Differs.into())
    }
}
