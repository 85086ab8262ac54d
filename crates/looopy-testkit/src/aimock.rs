//! [`Aimock`]: `@copilotkit/aimock`'s mock LLM server (`llmock`), started on
//! a free local port with a fixture file, killed on drop.
//!
//! One server answers the OpenAI chat completions and Responses APIs, the
//! Anthropic Messages API and the Gemini API from the same fixtures, so
//! each provider can be tested against a third-party implementation of its
//! vendor's wire format.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::external::{repo_root, require};

/// A running aimock server.
#[derive(Debug)]
pub struct Aimock {
    _child: Child,
    url: String,
}

/// The provisioned `llmock` command (`$LOOOPY_AIMOCK_BIN` when set), found
/// as [`require`] finds programs: `None` only when
/// `LOOOPY_SKIP_EXTERNAL=1` and it is missing.
pub fn aimock_bin() -> Option<PathBuf> {
    require(
        "LOOOPY_AIMOCK_BIN",
        repo_root().join(".tools/node/node_modules/.bin/llmock"),
        "@copilotkit/aimock",
    )
}

/// A fixture file of two steps: asked about "weather in Paris" (with no
/// tool result yet), the model calls `get_weather` (id `call_weather_1`,
/// arguments `{"city": "Paris", "unit": "celsius"}`); given that call's
/// result, it answers "It is 18 degrees and sunny in Paris.".
pub fn weather_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/aimock-weather.json")
}

impl Aimock {
    /// Starts aimock with `fixtures` (a JSON fixture file) on a free port
    /// of 127.0.0.1 and waits until it listens. `None` when it is not
    /// installed and `LOOOPY_SKIP_EXTERNAL=1`.
    ///
    /// # Panics
    ///
    /// When it cannot start, or does not listen within 30 seconds.
    pub async fn start(fixtures: &Path) -> Option<Aimock> {
        let bin = aimock_bin()?;
        let mut child = Command::new(&bin)
            .args([
                "--port",
                "0",
                "--host",
                "127.0.0.1",
                "--strict",
                "--fixtures",
            ])
            .arg(fixtures)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {} (is node installed?): {e}", bin.display()));
        let Some(stdout) = child.stdout.take() else {
            panic!("aimock's stdout is not piped");
        };
        let mut lines = BufReader::new(stdout).lines();
        let url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find("listening on ") {
                    return line[at + "listening on ".len()..].trim().to_owned();
                }
            }
            panic!("aimock exited before listening");
        })
        .await
        .unwrap_or_else(|_| panic!("aimock did not listen within 30 s"));
        // Keep draining its output so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Some(Aimock { _child: child, url })
    }

    /// `http://127.0.0.1:PORT` (no trailing slash, no API prefix).
    pub fn url(&self) -> &str {
        &self.url
    }
}
