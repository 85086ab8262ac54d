//! `looopy eval` through the real binary, against `@copilotkit/aimock`: a
//! dataset of 20 cases whose outcomes the fixture decides (7 are made to
//! fail), a judge model scripted by the same fixture, the JUnit XML, JSON
//! and HTML reports, and the comparison with a baseline run.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use looopy_testkit::aimock::Aimock;
use support::BIN;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/eval")
        .join(name)
}

/// `looopy eval` with the model and the judge on aimock at `url`.
async fn eval(url: &str, dir: &Path, args: Vec<String>) -> Output {
    let config = dir.join("looopy.toml");
    std::fs::write(
        &config,
        "[eval.judge]\nmodel = \"openai-chat:gpt-4o-mini\"\n",
    )
    .unwrap();
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(BIN);
        cmd.arg("eval")
            .args(["--config".as_ref(), config.as_os_str()])
            .args(["--model", "openai-chat:gpt-4o-mini"])
            .args(args);
        for var in [
            "LOOOPY_LLM_BASE_URL",
            "LOOOPY_LLM_MODEL",
            "LOOOPY_LLM_API_KEY",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_BASE_URL", format!("{url}/v1"));
        cmd.output().unwrap()
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_passes_and_fails_the_cases_it_should_and_compares_with_a_baseline() {
    let Some(aimock) = Aimock::start(&fixture("aimock.json")).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (junit, html, json) = (
        dir.path().join("junit.xml"),
        dir.path().join("report.html"),
        dir.path().join("run.json"),
    );
    let path = |p: &Path| p.display().to_string();
    let out = eval(
        aimock.url(),
        dir.path(),
        vec![
            path(&fixture("cases.toml")),
            "--concurrency".into(),
            "4".into(),
            "--junit".into(),
            path(&junit),
            "--html".into(),
            path(&html),
            "--json".into(),
            path(&json),
        ],
    )
    .await;
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "a case failed: {stdout}");
    assert!(
        stdout.contains("13 passed, 7 failed of 20"),
        "{stdout}\n{stderr}"
    );
    // Plain progress lines when stderr is not a terminal.
    assert!(stderr.contains("[20/20]"), "{stderr}");
    for failing in [
        "hello-missing-text",
        "hello-regex-digits",
        "weather-tool-wrong-city",
        "weather-tool-not-called",
        "weather-one-iteration",
        "forecast-schema-broken",
        "judge-french",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!(" {failing} ")))
            .unwrap();
        assert!(line.starts_with("FAIL"), "{line}");
    }
    let judged = stdout
        .lines()
        .find(|l| l.contains(" judge-greets "))
        .unwrap();
    assert!(judged.starts_with("PASS"), "{judged}");
    assert!(
        stdout.contains("It is in English."),
        "the judge's reason is shown: {stdout}"
    );

    // JUnit XML, valid against the schema of tests/fixtures/eval/junit.xsd.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("tests=\"20\" failures=\"7\" errors=\"0\""),
        "{xml}"
    );
    if let Some(python) = xmlschema_python() {
        let check = Command::new(python)
            .args([
                "-c",
                "import sys, xmlschema; xmlschema.XMLSchema(sys.argv[1]).validate(sys.argv[2])",
            ])
            .arg(fixture("junit.xsd"))
            .arg(&junit)
            .output()
            .unwrap();
        assert!(check.status.success(), "{}", text(&check.stderr));
    }

    // The HTML report stands alone: no script, no outside asset.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<span class=\"n\" id=\"passed\">13</span>"),
        "{page}"
    );
    assert!(page.contains("<span class=\"n\" id=\"failed\">7</span>"));
    assert!(!page.contains("<script") && !page.contains("src=\"http"));

    // A second run of a dataset where one failing case's expectation is
    // fixed and a passing case's regex changed: the comparison names them.
    let fixed = std::fs::read_to_string(fixture("cases.toml"))
        .unwrap()
        .replace(
            "expect = { contains = \"Goodbye\" }",
            "expect = { contains = \"friend\" }",
        )
        .replace(
            "expect = { judge = \"the answer greets the user\" }",
            "expect = { judge = \"the answer greets the user\", contains = \"Hello\" }",
        );
    let second = dir.path().join("fixed.toml");
    std::fs::write(&second, fixed).unwrap();
    let out = eval(
        aimock.url(),
        dir.path(),
        vec![path(&second), "--baseline".into(), path(&json)],
    )
    .await;
    let stdout = text(&out.stdout);
    assert!(stdout.contains("14 passed, 6 failed of 20"), "{stdout}");
    assert!(
        stdout.contains("newly passing: hello-missing-text"),
        "{stdout}"
    );
    assert!(
        stdout.contains("changed: judge-greets (checks)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 newly failing, 1 newly passing, 1 changed"),
        "{stdout}"
    );
}

/// The Python with `xmlschema` that `scripts/provision.sh` installs.
fn xmlschema_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/venv-xml/bin/python");
    if python.exists() {
        Some(python)
    } else if std::env::var_os("LOOOPY_SKIP_EXTERNAL").is_some() {
        eprintln!("SKIPPED the JUnit schema check: run scripts/provision.sh python");
        None
    } else {
        panic!(
            "{} is missing: run scripts/provision.sh python",
            python.display()
        )
    }
}

/// The library (`looopy::eval`) gives the same counts as the binary, with
/// the Agent built by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_runs_the_same_dataset_to_the_same_counts() {
    use std::sync::Arc;

    use looopy::agent::AgentTemplate;
    use looopy::eval::{Dataset, Evaluator};
    use looopy::pricing::PriceTable;
    use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};

    let Some(aimock) = Aimock::start(&fixture("aimock.json")).await else {
        return;
    };
    let llm = Arc::new(
        LiteLlmProvider::new(LiteLlmConfig::new(
            format!("{}/v1", aimock.url()),
            "gpt-4o-mini",
        ))
        .unwrap(),
    );
    let template = AgentTemplate::builder()
        .llm(llm.clone())
        .stores(&looopy::stores::memory::stores())
        .template()
        .unwrap();
    let dataset = Dataset::load(&fixture("cases.toml")).unwrap();
    let ended = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = ended.clone();
    let report = Evaluator::new(move |context: &str| template.agent(context))
        .concurrency(3)
        .model(
            "openai-chat:gpt-4o-mini".parse().unwrap(),
            PriceTable::builtin(),
        )
        .judge(llm)
        .on_progress(move |_| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .run(&dataset)
        .await;
    assert_eq!(
        (report.passed(), report.failed()),
        (13, 7),
        "{}",
        report.table()
    );
    assert_eq!(ended.load(std::sync::atomic::Ordering::Relaxed), 20);
    let weather = report
        .cases
        .iter()
        .find(|c| c.name == "weather-tool")
        .unwrap();
    assert_eq!(weather.tool_calls[0].name, "get_weather");
    assert_eq!(weather.tool_calls[0].arguments["city"], "Paris");
    assert_eq!(weather.iterations, 2);
    let two = report.cases.iter().find(|c| c.name == "two-turns").unwrap();
    assert_eq!(two.record.task_ids.len(), 2, "one task per turn");
    // A run read back from its JSON compares equal to itself.
    let again = looopy::eval::RunReport::from_json(&report.to_json()).unwrap();
    assert_eq!(looopy::eval::compare(&again, &report), Default::default());
}
