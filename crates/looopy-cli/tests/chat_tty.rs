//! `looopy chat` on a terminal (a pseudo-terminal): the line editor edits
//! (a typo fixed with the arrow keys), history brings back the last line
//! (↑), and Ctrl-C at the prompt leaves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::Write;
use std::time::{Duration, Instant};

use looopy_testkit::{FixtureReply, OpenAiFixture};
use support::serve_running;

/// The last user message of a request the model got.
fn last_user_text(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_lines_are_edited_history_recalls_and_ctrl_c_leaves() {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Text("First answer.".into()));
    llm.push(FixtureReply::Text("Second answer.".into()));
    let (_dir, config) = support::config_with_model(&llm, "m", "");
    let (server, url) = serve_running(&config, &[]);
    let status = tokio::task::spawn_blocking(move || {
        let (mut child, mut master, screen) = support::chat_on_pty(&url, None);
        screen.wait_for("> ");
        // "helo", ← , "l": the editor inserts before the cursor.
        master.write_all(b"helo\x1b[Dl\r").unwrap();
        screen.wait_for("First answer.");
        // The next prompt, after the answer.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = screen.text();
            let after = &text[text.find("First answer.").unwrap()..];
            if after.contains("> ") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no prompt after the answer: {text:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // ↑ brings "hello" back; Enter sends it again.
        master.write_all(b"\x1b[A\r").unwrap();
        screen.wait_for("Second answer.");
        support::ctrl_c_until_it_leaves(&mut child, &mut master)
    })
    .await
    .unwrap();
    assert!(status.success(), "{status:?}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(last_user_text(&requests[0].body), "hello");
    assert_eq!(last_user_text(&requests[1].body), "hello");
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
}
