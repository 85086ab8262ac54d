//! `looopy record <task-id>`: a turn's execution record, read from a
//! server (`GET /v1/tasks/{id}/record`, with the caller's bearer token):
//! the task's latest turn, or turn `N` with `--turn N`, printed as a step
//! list or, with `--json`, as the record itself.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use looopy_core::record::{ExecutionRecord, StepKind};

/// Fetches the record of the latest turn of `task_id` from the server at
/// `url`.
pub async fn fetch(url: &str, task_id: &str, token: Option<&str>) -> Result<ExecutionRecord> {
    fetch_turn(url, task_id, None, token).await
}

/// Fetches the record of turn `turn` of `task_id` (the latest turn when
/// `None`) from the server at `url`.
pub async fn fetch_turn(
    url: &str,
    task_id: &str,
    turn: Option<u64>,
    token: Option<&str>,
) -> Result<ExecutionRecord> {
    let base = url.trim_end_matches('/');
    let mut task = String::new();
    for b in task_id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            task.push(char::from(b));
        } else {
            let _ = write!(task, "%{b:02X}");
        }
    }
    let mut address = format!("{base}/v1/tasks/{task}/record");
    if let Some(turn) = turn {
        let _ = write!(address, "?turn={turn}");
    }
    let mut request = reqwest::Client::new().get(address);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("could not reach {base}"))?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        match turn {
            Some(turn) => {
                bail!("no execution record of turn {turn} of task {task_id} for this caller")
            }
            None => bail!("no execution record of task {task_id} for this caller"),
        }
    }
    if status == reqwest::StatusCode::UNAUTHORIZED {
        bail!("the server refused the credentials (give --token or LOOOPY_TOKEN)");
    }
    if !status.is_success() {
        bail!(
            "the server answered {status}: {}",
            response.text().await.unwrap_or_default()
        );
    }
    response
        .json::<ExecutionRecord>()
        .await
        .context("the server's answer is not an execution record")
}

/// The record as a readable step list.
pub fn render(record: &ExecutionRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "task {}  context {}  turn {}  principal {}",
        record.task_id,
        record.context_id,
        record.turn_number.map_or("-".to_owned(), |n| n.to_string()),
        record.principal.as_deref().unwrap_or("-"),
    );
    let outcome = record
        .outcome
        .as_ref()
        .map_or("running (or its process died)".to_owned(), |o| {
            format!("{:?} ({})", o.state, o.end).to_lowercase()
        });
    let total = record
        .ended_at
        .map(|end| format!("{} ms", (end - record.started_at).num_milliseconds()));
    let _ = writeln!(
        out,
        "started {}  {}  {}",
        record.started_at.to_rfc3339(),
        total.unwrap_or_default(),
        outcome
    );
    for (i, step) in record.steps.iter().enumerate() {
        let offset = (step.started_at - record.started_at).num_milliseconds();
        let ms = step.duration.as_secs_f64() * 1000.0;
        let what = match &step.kind {
            StepKind::ModelCall(c) => {
                let answer = match (&c.response, &c.error) {
                    (_, Some(e)) => format!("FAILED {}: {}", e.kind, e.message),
                    (Some(r), None) => {
                        let calls: Vec<&str> =
                            r.tool_calls.iter().map(|t| t.name.as_str()).collect();
                        let usage = r.usage.map_or(String::new(), |u| {
                            format!(" [{} in / {} out tokens]", u.input_tokens, u.output_tokens)
                        });
                        if calls.is_empty() {
                            format!("{}: {}{usage}", r.finish_reason, r.text.summary(80))
                        } else {
                            format!("calls {}{usage}", calls.join(", "))
                        }
                    }
                    (None, None) => "no answer".to_owned(),
                };
                format!("model {}/{}  {answer}", c.provider, c.model)
            }
            StepKind::Retry {
                retry,
                delay,
                error,
            } => format!(
                "retry #{retry} after {} ms ({}: {})",
                delay.as_millis(),
                error.kind,
                error.message
            ),
            StepKind::Fallback { from, to, error } => {
                format!("fallback {from} -> {to} ({})", error.kind)
            }
            StepKind::ToolCall(c) => {
                let failed = c
                    .failure
                    .map_or(String::new(), |f| format!("FAILED ({f:?}) ").to_lowercase());
                format!(
                    "tool {}({})  {failed}-> {}",
                    c.name,
                    c.arguments.summary(60),
                    c.result.summary(80)
                )
            }
            StepKind::Compaction {
                summarized_messages,
                kept_messages,
            } => format!(
                "compaction: {summarized_messages} messages summarised, {kept_messages} kept"
            ),
            StepKind::Recovered {
                previous_steps,
                from,
            } => format!(
                "recovered: resumed from {} after its process died ({previous_steps} steps before)",
                from.map_or("its checkpoint".to_owned(), |c| format!(
                    "the checkpoint of iteration {} ({} messages)",
                    c.iteration, c.messages
                ))
            ),
            StepKind::Decision(d) => format!(
                "{}: {} {}{}",
                d.by,
                d.decision,
                d.tool.as_deref().unwrap_or("call"),
                d.reason
                    .as_ref()
                    .map_or(String::new(), |r| format!(" ({r})"))
            ),
            StepKind::Checkpoint(c) => format!(
                "checkpoint: iteration {}, {} messages",
                c.iteration, c.messages
            ),
            _ => "step".to_owned(),
        };
        let _ = writeln!(out, "{:>3}. +{offset:>6} ms {ms:>9.1} ms  {what}", i + 1);
    }
    out
}
