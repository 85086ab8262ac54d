//! Resources and prompts by reference through the real binaries: in
//! `looopy chat`, `@server:uri` attaches a resource of one of the agent's
//! MCP servers and `/prompt server:name key=value` starts from a prompt;
//! `looopy serve` fills them in before the model call, so the model reads
//! the resource's content and the prompt's text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::Write;

use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::Value;
use support::{serve_running, write_config};

/// Every message text of a recorded chat request, joined.
fn sent_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(support::message_text)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn looopy_chat_attaches_a_resource_and_starts_from_a_prompt() {
    let Some(python) = support::python() else {
        return;
    };
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Text("read the note".into()));
    llm.push(FixtureReply::Text("reviewed".into()));
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        &dir,
        &format!(
            "[llm]\nbase_url = \"{base}\"\nmodel = \"m\"\n{mcp}",
            base = llm.base_url(),
            mcp = support::mcp_fixture_section(&python, "fixture"),
        ),
    );
    let (server, url) = serve_running(&config, &[]);
    let screen = tokio::task::spawn_blocking(move || {
        let (mut child, mut master, screen) = support::chat_on_pty(&url, None);
        screen.wait_for("> ");
        master
            .write_all(b"what is in @fixture:mem://notes/today ?\r")
            .unwrap();
        screen.wait_for("read the note");
        master
            .write_all(b"/prompt fixture:review code=\"fn main() {}\"\r")
            .unwrap();
        screen.wait_for("reviewed");
        master.write_all(b"/prompt review\r").unwrap();
        screen.wait_for("write /prompt server:name");
        support::ctrl_c_until_it_leaves(&mut child, &mut master);
        screen.text()
    })
    .await
    .unwrap();
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "{screen}");
    let first = sent_text(&requests[0].body);
    assert!(
        first.contains("what is in @fixture:mem://notes/today ?"),
        "{first}"
    );
    assert!(
        first.contains("Resource mem://notes/today of MCP server 'fixture':"),
        "{first}"
    );
    assert!(first.contains("Buy milk; call Ada."), "{first}");
    let second = sent_text(&requests[1].body);
    assert!(
        second.contains("Review this Rust code:\nfn main() {}"),
        "{second}"
    );
    // The conversation keeps the reference, and fills it in again.
    assert!(second.contains("Buy milk; call Ada."), "{second}");
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
}

/// The chat page in headless Chromium (`tests/fixtures/web_prompts.cjs`):
/// the Prompts menu lists the MCP server's prompts, asks for the chosen
/// one's arguments and sends it as a reference part, which the server
/// fills in. `GET /web/prompts` is behind the server's tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_page_offers_the_servers_prompts_as_a_menu() {
    let Some(browser) = looopy_testkit::external::browser() else {
        return;
    };
    let Some(python) = support::python() else {
        return;
    };
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Text("reviewed".into()));
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        &dir,
        &format!(
            "[llm]\nbase_url = \"{base}\"\nmodel = \"m\"\n\
             [[auth.tokens]]\nprincipal = \"web\"\ntoken = \"web-token\"\n{mcp}",
            base = llm.base_url(),
            mcp = support::mcp_fixture_section(&python, "fixture"),
        ),
    );
    let (server, url) = serve_running(&config, &[]);

    let http = reqwest::Client::new();
    let refused = http.get(format!("{url}/web/prompts")).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let listed: Value = http
        .get(format!("{url}/web/prompts"))
        .bearer_auth("web-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let review = listed["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "review")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(review["server"], "fixture");
    assert_eq!(review["arguments"][0]["name"], "code");
    assert_eq!(review["arguments"][0]["required"], true);
    assert_eq!(listed["errors"], serde_json::json!([]));

    support::run_page_script(&browser, "web_prompts.cjs", server, &url, "web-token", &[]).await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    let sent = sent_text(&requests[0].body);
    assert!(
        sent.contains("Review this Rust code:\nfn main() {}"),
        "{sent}"
    );
    assert!(sent.contains("Be brief."), "{sent}");
}
