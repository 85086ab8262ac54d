//! `[artifacts]` of `looopy.toml` read by the real binary: a blob store
//! opened at start, its mistakes refused before anything runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use crate::support;

use support::{BIN, serve, stop, write_config};

/// `looopy run` with `body` as its `looopy.toml`, in the file's folder.
fn run_with(dir: &tempfile::TempDir, body: &str) -> std::process::Output {
    let config = write_config(dir, body);
    Command::new(BIN)
        .current_dir(dir.path())
        .args(["run", "--config"])
        .arg(&config)
        .arg("x")
        .env_remove("LOOOPY_LLM_BASE_URL")
        .env_remove("LOOOPY_LLM_MODEL")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_opens_the_configured_filesystem_store_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = dir.path().join("data/blobs");
    let config = write_config(
        &dir,
        &format!(
            "[artifacts]\nbackend = \"filesystem\"\npath = \"{}\"\ninline_limit_bytes = 1024\n",
            blobs.display()
        ),
    );
    let (server, url) = serve(&config, &[]);
    assert!(blobs.is_dir(), "the blob directory is created at start");
    let card = reqwest::get(format!("{url}/.well-known/agent-card.json"))
        .await
        .unwrap();
    assert!(card.status().is_success());
    let status = tokio::task::spawn_blocking(move || stop(server))
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn mistakes_in_the_artifacts_table_stop_the_start_naming_the_key() {
    for (body, named) in [
        (
            "[artifacts]\nbackend = \"filesystem\"\npath = \"b\"\ninline_limt = 10\n",
            "inline_limt",
        ),
        (
            "[artifacts]\nbackend = \"s3\"\nbucket = \"b\"\nendpiont = \"x\"\n",
            "endpiont",
        ),
        ("[artifacts]\nbackend = \"gcs\"\n", "gcs"),
        (
            "[artifacts]\nbackend = \"filesystem\"\npath = \"b\"\nmax_upload_bytes = \"lots\"\n",
            "max_upload_bytes",
        ),
        (
            "[artifacts]\nbackend = \"filesystem\"\npath = \"b\"\ninline_limit_bytes = 100\nmax_upload_bytes = 10\n",
            "inline_limit_bytes",
        ),
        (
            "[artifacts]\nbackend = \"s3\"\nbucket = \"b\"\npresign_ttl_secs = 0\n",
            "presign_ttl_secs",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = run_with(&dir, body);
        assert!(!out.status.success(), "{body}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{body}: {err}");
    }
}

#[test]
fn a_blob_directory_that_cannot_be_made_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be: creating it fails.
    std::fs::write(dir.path().join("taken"), b"x").unwrap();
    let out = run_with(
        &dir,
        "[artifacts]\nbackend = \"filesystem\"\npath = \"taken/blobs\"\n",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[artifacts]"), "{err}");
    assert!(err.contains("blob directory"), "{err}");
}
