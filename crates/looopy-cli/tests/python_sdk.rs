//! The official Python A2A SDK clients (a2a-sdk 1.x and 0.3.x, provisioned
//! by `scripts/provision.sh python`) against the real `looopy serve` binary.
//! The clients are the scripts of looopy-a2a's interop tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::PathBuf;
use std::process::Command;

use looopy_testkit::external::repo_root;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::Value;
use support::{config_with_model, json_output, serve, stop};

/// What the client `script` run by `python` found (`Null` when external
/// tests are skipped and there is no such Python).
async fn against_looopy_serve(python: Option<PathBuf>, script: &str) -> Value {
    let Some(python) = python else {
        return Value::Null;
    };
    let llm = OpenAiFixture::start_fast(
        std::time::Duration::ZERO,
        FixtureReply::Text("Hello from looopy serve".into()),
    )
    .await
    .unwrap();
    let rest = "[agent]\nname = \"binary-agent\"\n[[auth.tokens]]\nprincipal = \"python\"\ntoken = \"py-token\"\n";
    let (_dir, config) = config_with_model(&llm, "m", rest);
    let (server, url) = serve(&config, &[]);
    let script = repo_root()
        .join("crates/looopy-a2a/tests/fixtures")
        .join(script);
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .arg(url)
            .arg("py-token")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    stop(server);
    json_output(&out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_sdk_1_x_talks_to_looopy_serve() {
    let out = against_looopy_serve(support::python(), "a2a_client_v1.py").await;
    if out.is_null() {
        return;
    }
    assert_eq!(out["card"]["name"], "binary-agent");
    assert_eq!(out["sent_version_header"], "1.0");
    let text = out["send"].to_string() + &out["stream"].to_string();
    assert!(text.contains("Hello from looopy serve"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_sdk_0_3_talks_to_looopy_serve() {
    let out = against_looopy_serve(support::python_a2a03(), "a2a_client_v03.py").await;
    if out.is_null() {
        return;
    }
    assert!(out.to_string().contains("binary-agent"), "{out}");
    assert!(out.to_string().contains("Hello from looopy serve"), "{out}");
}
