//! What the `looopy` binary prints for people: one line per error, no log
//! noise from `run` unless asked, and `serve`'s start-up banner.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};

use support::{BIN, Captured, Running, write_config};

/// `looopy <args>` without the caller's model, log and export variables.
fn looopy(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for var in [
        "LOOOPY_LLM_BASE_URL",
        "LOOOPY_LLM_MODEL",
        "RUST_LOG",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// `looopy serve --config <config>` on a free port, and what it prints on
/// stdout and on stderr as it comes.
fn serve_watched(config: &Path) -> (Running, Captured, Captured) {
    let mut child = Running::new(
        looopy(&["serve", "--config", config.to_str().unwrap()])
            .args(["--bind", "127.0.0.1:0"])
            .current_dir(config.parent().unwrap())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let out = Captured::spawn(child.stdout.take().unwrap());
    let err = Captured::spawn(child.stderr.take().unwrap());
    (child, out, err)
}

#[test]
fn run_without_a_model_says_so_in_one_line_without_logs_or_backtrace() {
    let out = looopy(&["run", "hello"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(
        lines[0].starts_with("looopy: no model is configured: set `model`"),
        "{err}"
    );
    assert!(lines[0].contains("gemini:gemini-2.5-flash"), "{err}");
    assert!(lines[0].contains("LOOOPY_LLM_BASE_URL"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
}

#[test]
fn a_failed_turn_is_one_line_and_minus_v_shows_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9: the model call fails at once.
    let config = write_config(
        &dir,
        "[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\nmax_retries = 0\n",
    );
    let config = config.to_str().unwrap();
    let out = looopy(&["run", "--config", config, "hello"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("looopy: the turn failed: "), "{err}");
    assert!(!err.contains("ERROR"), "{err}");

    // -v shows the logs (the turn's failure among them).
    let verbose = looopy(&["run", "-v", "--config", config, "hello"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&verbose.stderr);
    assert!(err.lines().count() > 1, "{err}");
    assert!(err.contains("ERROR"), "{err}");
}

#[test]
fn chat_with_an_unreachable_agent_says_so_in_one_line() {
    let out = looopy(&["chat", "http://127.0.0.1:9"])
        .env_remove("LOOOPY_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("looopy: cannot reach the agent at http://127.0.0.1:9: "),
        "{err}"
    );
}

#[test]
fn chat_without_the_right_token_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        &dir,
        "[[auth.tokens]]\nprincipal = \"a\"\ntoken = \"right\"\n",
    );
    let (server, url) = support::serve_running(&config, &[]);
    for token in [None, Some("wrong")] {
        let mut cmd = looopy(&["chat", &url]);
        cmd.env_remove("LOOOPY_TOKEN");
        if let Some(t) = token {
            cmd.args(["--token", t]);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"hello\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "{token:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let said = match token {
            None => format!("the agent at {url} wants a token: pass --token or set LOOOPY_TOKEN"),
            Some(_) => format!("the agent at {url} refused the token (--token or LOOOPY_TOKEN)"),
        };
        assert!(
            err.ends_with(&format!("looopy: {said}\n")),
            "{token:?}: {err}"
        );
    }
    assert!(server.stop().success());
}

#[test]
fn a_half_filled_llm_section_is_refused_with_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(&dir, "[llm]\nbase_url = \"http://127.0.0.1:4000/v1\"\n");
    for command in ["serve", "run"] {
        let mut args = vec![command, "--config", config.to_str().unwrap()];
        if command == "run" {
            args.push("hi");
        }
        let out = looopy(&args).output().unwrap();
        assert!(!out.status.success(), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("looopy: the [llm] section lacks `model`"),
            "{err}"
        );
        assert!(err.contains("LOOOPY_LLM_MODEL"), "{err}");
    }
    // The environment may complete it.
    let out = looopy(&["run", "--config", config.to_str().unwrap(), "hi"])
        .env("LOOOPY_LLM_MODEL", "m")
        .env("LOOOPY_LLM_BASE_URL", "http://127.0.0.1:9")
        .env("OTEL_SDK_DISABLED", "true")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("lacks"), "{err}");
}

#[test]
fn serve_prints_a_banner_and_warns_when_there_is_no_model() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        &dir,
        "[agent]\nname = \"banner-agent\"\n[[auth.tokens]]\nprincipal = \"a\"\ntoken = \"secret-token\"\n",
    );
    let (child, out, err) = serve_watched(&config);
    let url = out
        .wait_for("\n")
        .trim()
        .strip_prefix("looopy listening on ")
        .unwrap()
        .to_owned();
    let banner = err.wait_for("warning:");
    assert!(banner.contains("serving agent 'banner-agent'"), "{banner}");
    assert!(banner.contains(&format!("chat page {url}/")), "{banner}");
    assert!(banner.contains("model     none"), "{banner}");
    let database = std::path::absolute(dir.path().join(".looopy/looopy.db")).unwrap();
    assert!(
        banner.contains(&format!("store     sqlite ({})", database.display())),
        "{banner}"
    );
    assert!(banner.contains("tools     none"), "{banner}");
    assert!(banner.contains("auth      on (1 token)"), "{banner}");
    assert!(
        banner.contains("warning: no model is configured"),
        "{banner}"
    );
    assert!(!banner.contains("secret-token"), "{banner}");
    assert!(child.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_names_its_model_and_does_not_warn() {
    let llm = looopy_testkit::OpenAiFixture::start().await.unwrap();
    let (_dir, config) = support::config_with_model(&llm, "gpt-test", "");
    let (child, _out, err) = serve_watched(&config);
    let banner = tokio::task::spawn_blocking(move || err.wait_for("auth      off"))
        .await
        .unwrap();
    assert!(
        banner.contains(&format!("model     gpt-test at {}", llm.base_url())),
        "{banner}"
    );
    assert!(!banner.contains("warning"), "{banner}");
    tokio::task::spawn_blocking(move || child.stop())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_json_object_per_line_with_level_message_and_fields() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9: the turn's model call fails at once, and
    // the turn's failure is logged.
    let config = write_config(
        &dir,
        "[agent]\nname = \"json-agent\"\n[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\nmax_retries = 0\n",
    );
    let mut child = Running::new(
        looopy(&["serve", "--config", config.to_str().unwrap()])
            .args(["--bind", "127.0.0.1:0"])
            .current_dir(dir.path())
            .env("LOOOPY_LOG_FORMAT", "json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let out = Captured::spawn(child.stdout.take().unwrap());
    let err = Captured::spawn(child.stderr.take().unwrap());
    let url = tokio::task::spawn_blocking(move || out.wait_for("\n"))
        .await
        .unwrap()
        .trim()
        .strip_prefix("looopy listening on ")
        .unwrap()
        .to_owned();
    let answer = looopy_a2a::A2aClient::new(&url)
        .send(&looopy_a2a::SendRequest::text("hello"))
        .await
        .unwrap();
    let looopy_a2a::SendResponse::Task(task) = answer else {
        panic!("expected a task: {answer:?}");
    };
    assert_eq!(task.status.state, looopy_core::TaskState::Failed);
    let status = tokio::task::spawn_blocking(move || child.stop())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");

    let text = err.to_end();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    for line in &lines {
        assert!(line["level"].is_string(), "no level: {line}");
        assert!(line["timestamp"].is_string(), "no timestamp: {line}");
        assert!(line["fields"]["message"].is_string(), "no message: {line}");
    }
    let said = |level: &str, message: &str| {
        lines
            .iter()
            .find(|l| l["level"] == level && l["fields"]["message"] == message)
            .cloned()
            .unwrap_or_else(|| panic!("no {level} line {message:?} in: {text}"))
    };
    // The banner is a log line too, its facts in fields.
    let banner = said("INFO", "serving agent 'json-agent'");
    assert_eq!(banner["fields"]["agent"], "json-agent");
    assert_eq!(banner["fields"]["a2a"], format!("{url}/"));
    // The turn's failure, with the error as a field of its own.
    let failed = said("ERROR", "turn failed");
    assert!(
        failed["fields"]["error"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{failed}"
    );
}
