//! `looopy replay` through the real binary: a turn served on Redis that
//! called an MCP tool (`durable_tools.py`, which journals each run) is
//! replayed from the store with the same scripted model (no difference, the
//! tool not run), from the file `looopy record --json` wrote with a model
//! that answers differently at its second step (exactly that step
//! reported), and with `--live-tools` (the tool runs again).
#![allow(clippy::unwrap_used)]

use crate::approval::{self, Setup};
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use looopy_testkit::FixtureReply;
use serde_json::Value;
use support::{BIN, serve_running};

/// [`approval::model`], its answer worded `done: <result>` instead of
/// `final: <result>`.
fn changed_model(body: &Value) -> FixtureReply {
    match approval::model(body) {
        FixtureReply::Text(text) => FixtureReply::Text(text.replacen("final:", "done:", 1)),
        call => call,
    }
}

/// The stdout of `out`, which exited with `code`.
fn exited(out: &Output, code: i32) -> String {
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}{}",
        text(&out.stderr)
    );
    stdout
}

/// `looopy replay` with these arguments, its LLM variables removed.
async fn replay(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(BIN);
        cmd.arg("replay").args(args);
        for var in [
            "LOOOPY_LLM_BASE_URL",
            "LOOOPY_LLM_MODEL",
            "LOOOPY_LLM_API_KEY",
            "LOOOPY_TOKEN",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            cmd.env_remove(var);
        }
        cmd.output().unwrap()
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_tool_turn_replays_the_same_with_its_model_and_shows_a_changed_step() {
    let redis = looopy_testkit::test_redis().unwrap();
    let prefix = format!("replay-{}", uuid::Uuid::new_v4().simple());
    let store = format!(
        "[store]\nbackend = \"redis\"\nurl = \"{}\"\nkey_prefix = \"{prefix}\"\n",
        redis.url()
    );
    let Some(setup) = Setup::with(&store, "", "", approval::model).await else {
        return;
    };
    let quick_runs = || {
        setup
            .journal()
            .iter()
            .filter(|l| l.starts_with("quick"))
            .count()
    };
    let (server, url) = serve_running(&setup.config, &[]);
    let out = setup.ask(&url, "backup").await;
    let task = &out["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{out}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    assert_eq!(quick_runs(), 1);
    let config = path(&setup.config);

    // From the configured store, with the same model: nothing differs and
    // the tool's result comes from the record.
    let same = replay(vec![task_id.clone(), "--config".into(), config.clone()]).await;
    let stdout = exited(&same, 0);
    assert!(
        stdout.contains("= model step 1: calls quick_note({\"job\":\"backup\"})"),
        "{stdout}"
    );
    assert!(
        stdout.contains("= model step 2: \"final: noted backup\""),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("no difference"), "{stdout}");
    assert_eq!(quick_runs(), 1, "the tool did not run");

    // The record as `looopy record --json` prints it, replayed with a model
    // that words its answer differently.
    let dir = tempfile::tempdir().unwrap();
    let record_file = dir.path().join("record.json");
    let record = tokio::task::spawn_blocking({
        let (task_id, url) = (task_id.clone(), url.clone());
        move || {
            Command::new(BIN)
                .args([
                    "record", &task_id, "--url", &url, "--token", "py-token", "--json",
                ])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(record.status.success(), "{}", text(&record.stderr));
    std::fs::write(&record_file, &record.stdout).unwrap();
    server.stop();

    let changed_llm = support::model_answering(changed_model).await;
    let changed_config = dir.path().join("changed.toml");
    let original = std::fs::read_to_string(&setup.config).unwrap();
    let base_url = original
        .lines()
        .find_map(|l| l.strip_prefix("base_url = "))
        .unwrap()
        .to_owned();
    std::fs::write(
        &changed_config,
        original.replace(
            &format!("base_url = {base_url}"),
            &format!("base_url = \"{}\"", changed_llm.base_url()),
        ),
    )
    .unwrap();
    let changed = replay(vec![
        task_id.clone(),
        "--config".into(),
        path(&changed_config),
        "--record".into(),
        path(&record_file),
    ])
    .await;
    let stdout = exited(&changed, 1);
    assert!(
        stdout.contains("= model step 1: calls quick_note"),
        "{stdout}"
    );
    assert!(stdout.contains("! model step 2 differs"), "{stdout}");
    assert!(
        stdout.contains("    recorded: \"final: noted backup\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("    replayed: \"done: noted backup\""),
        "{stdout}"
    );
    assert_eq!(stdout.matches("! model step").count(), 1, "{stdout}");
    assert!(
        !stdout.contains("tool call not"),
        "the same calls: {stdout}"
    );
    assert!(
        stdout.trim_end().ends_with("differs from model step 2"),
        "{stdout}"
    );
    assert!(text(&changed.stderr).contains("the replay differs from the record"));

    // As JSON: the step and the calls, typed.
    let json_out = replay(vec![
        task_id.clone(),
        "--config".into(),
        path(&changed_config),
        "--record".into(),
        path(&record_file),
        "--json".into(),
    ])
    .await;
    let report: Value = serde_json::from_str(&exited(&json_out, 1)).unwrap();
    assert_eq!(report["taskId"], task_id.as_str());
    assert_eq!(report["firstDifference"], 1);
    assert_eq!(report["toolCalls"][0]["name"], "quick_note");
    assert_eq!(report["toolCalls"][0]["source"], "record");
    assert_eq!(report["replayedAnswer"], "done: noted backup");
    assert_eq!(quick_runs(), 1, "the tool did not run");

    // With live tools the tool runs (the server is stopped: the replay
    // needs only the store and the model).
    let live = replay(vec![
        task_id.clone(),
        "--config".into(),
        config.clone(),
        "--live-tools".into(),
    ])
    .await;
    let stdout = exited(&live, 0);
    assert!(stdout.contains("(live tools)"), "{stdout}");
    assert_eq!(quick_runs(), 2, "the tool ran: {:?}", setup.journal());

    // A task the store has no record of: an error, exit status 2.
    let missing = replay(vec!["no-such-task".into(), "--config".into(), config]).await;
    exited(&missing, 2);
    assert!(
        text(&missing.stderr).contains("no record of task no-such-task"),
        "{}",
        text(&missing.stderr)
    );
    let wrong: PathBuf = dir.path().join("not-a-record.json");
    std::fs::write(&wrong, "{\"hello\": 1}").unwrap();
    let bad = replay(vec![
        task_id,
        "--config".into(),
        path(&changed_config),
        "--record".into(),
        path(&wrong),
    ])
    .await;
    exited(&bad, 2);
    assert!(
        text(&bad.stderr).contains("is not an execution record"),
        "{}",
        text(&bad.stderr)
    );
}
