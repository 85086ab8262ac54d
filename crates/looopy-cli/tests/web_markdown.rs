//! The chat page of `looopy serve` renders the model's answer as Markdown
//! in headless Chromium (`tests/fixtures/web_markdown.cjs`): headings,
//! emphasis, nested lists, a table, a code block with a working copy
//! button, and no HTML, script or `javascript:` link from the model's text.
//!
//! Chromium and playwright-core come from `scripts/provision.sh chromium`;
//! without them this test fails, unless `LOOOPY_SKIP_EXTERNAL=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;

use looopy_testkit::external::browser;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use support::serve_running;

/// What the model answers: Markdown with every block kind the page renders,
/// and attempts to inject markup through it.
const ANSWER: &str = r#"# Report

Some **bold** and *italic* text, `x < y`, and [the docs](https://example.com/docs).

- one
- two
  - nested
- three

1. first
2. second

| name | value |
|------|------:|
| answer | 42 |
| other | 7 |

```rust
fn main() {
    println!("<b>hi</b>");
}
```

Attempts: <img src=x onerror=pwned("img")> and <script>pwned("script")</script>.
A [click me](javascript:pwned("link")) and a [data link](data:text/html,<script>pwned(1)</script>)."#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_page_renders_markdown_answers_without_injecting_html() {
    let Some(browser) = browser() else {
        return;
    };
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Text(ANSWER.into()));
    let (_dir, config) = support::config_with_model(&llm, "m", "");
    let (server, url) = serve_running(&config, &[]);
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-markdown");
    std::fs::create_dir_all(&shots).unwrap();
    eprintln!("screenshots in {}", shots.display());
    support::run_page_script(
        &browser,
        "web_markdown.cjs",
        server,
        &url,
        "",
        &[("SHOTS", shots.as_path())],
    )
    .await;
    assert_eq!(llm.requests().len(), 1, "one turn");
}
