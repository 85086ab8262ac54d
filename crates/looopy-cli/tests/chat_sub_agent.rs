//! `looopy chat` on a terminal against a `looopy serve` whose tool is
//! another `looopy serve` (`[[tools.a2a]]`): the called agent's progress
//! (its state, its own tool calls, its answer) is shown indented under the
//! calling tool's line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::Write;

use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use support::serve_running;

/// One agent's config on the shared model fixture, with `tools` after it.
fn config(llm: &OpenAiFixture, name: &str, tools: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let rest = format!("max_retries = 0\n[agent]\nname = \"{name}\"\n{tools}");
    support::config_with_model(llm, "m", &rest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_called_agents_progress_is_shown_nested_under_the_tool() {
    let llm = OpenAiFixture::start().await.unwrap();
    // The calls come one after the other: the parent asks the child, the
    // child calls a tool it does not have, then answers, then the parent
    // answers.
    llm.push(FixtureReply::sse(vec![
        openai::tool_call_start_chunk(0, "call-p", "forecaster"),
        openai::tool_args_chunk(0, r#"{"message":"weather in Paris?"}"#),
        openai::finish_chunk("tool_calls"),
    ]));
    llm.push(FixtureReply::sse(vec![
        openai::tool_call_start_chunk(0, "call-c", "lookup"),
        openai::tool_args_chunk(0, r#"{"city":"Paris"}"#),
        openai::finish_chunk("tool_calls"),
    ]));
    llm.push(FixtureReply::Text(
        "Sunny over Paris, says the child.".into(),
    ));
    llm.push(FixtureReply::Text("The forecaster says: sunny.".into()));

    let (_child_dir, child_config) = config(&llm, "forecaster", "");
    let (child, child_url) = serve_running(&child_config, &[]);
    let remote = format!("\n[[tools.a2a]]\nname = \"forecaster\"\nurl = \"{child_url}\"\n");
    let (_parent_dir, parent_config) = config(&llm, "parent", &remote);
    let (parent, url) = serve_running(&parent_config, &[]);

    let (screen, status) = tokio::task::spawn_blocking(move || {
        let (mut chat, mut master, screen) = support::chat_on_pty(&url, None);
        screen.wait_for("> ");
        master.write_all(b"what's the weather?\r").unwrap();
        screen.wait_for("The forecaster says: sunny.");
        let status = support::ctrl_c_until_it_leaves(&mut chat, &mut master);
        (screen.text(), status)
    })
    .await
    .unwrap();
    assert!(status.success(), "{status:?}");
    let plain = anstream::adapter::strip_str(&screen).to_string();
    let lines: Vec<&str> = plain.lines().map(|l| l.trim_end_matches('\r')).collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{plain}"))
    };
    let call = at("→ forecaster");
    assert!(lines[call].starts_with("  → forecaster"), "{plain}");
    // The child's own tool call, two levels in.
    let nested_call = at("→ lookup");
    assert!(
        lines[nested_call].starts_with(r#"      → lookup {"city":"Paris"}"#),
        "{plain}"
    );
    assert!(
        lines[at("← lookup")].starts_with("      ← lookup (unknown tool, "),
        "{plain}"
    );
    // The child's answer and its end, one level in.
    let answer = at("│ Sunny over Paris");
    assert!(
        lines[answer].starts_with("    │ Sunny over Paris, says the child."),
        "{plain}"
    );
    let completed = at("    [completed]");
    let done = at("← forecaster (ok");
    assert!(lines[done].starts_with("  ← forecaster (ok, "), "{plain}");
    assert!(
        call < nested_call && nested_call < answer && answer < completed && completed < done,
        "nested lines between the tool's start and end, in order:\n{plain}"
    );
    assert!(at("The forecaster says: sunny.") > done, "{plain}");
    assert_eq!(llm.requests().len(), 4);
    tokio::task::spawn_blocking(move || {
        let _ = parent.stop();
        let _ = child.stop();
    })
    .await
    .unwrap();
}
