//! Resources and prompts by reference (`looopy_core::mcp_ref`), filled in
//! by [`McpReferences`] from the Python fixture server: a resource's
//! current content (read afresh each time, so an update is seen), a
//! prompt's messages before the rest of its message, and a line saying why
//! for a reference that cannot be filled in.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::mcp_ref::{McpPromptRef, McpRef, McpResourceRef};
use looopy_core::{History, Message, Part, Role, ToolCall, ToolProvider};
use looopy_tools::McpReferences;
use serde_json::json;
use support::cx;

fn resource(server: &str, uri: &str) -> Part {
    McpRef::Resource(McpResourceRef {
        server: server.into(),
        uri: uri.into(),
    })
    .to_part()
}

#[tokio::test]
async fn resources_are_filled_in_as_they_are_now_and_prompts_as_messages() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let references = McpReferences::new([mcp.clone()]);
    let plain = History::from(vec![Message::user("hello")]);
    assert!(
        references.expand(&plain).await.is_none(),
        "nothing to fill in"
    );

    let asked = Message::with_parts(
        Role::User,
        vec![
            Part::text("What does it say?"),
            resource("py", "mem://notes/live"),
        ],
    );
    let history = History::from(vec![Message::user("earlier"), asked]);
    let sent = references.expand(&history).await.unwrap().to_vec();
    assert_eq!(sent.len(), 2);
    assert_eq!(Some(&sent[0]), history.get(0));
    assert_eq!(
        sent[1].parts,
        [
            Part::text("What does it say?"),
            Part::text("Resource mem://notes/live of MCP server 'py':"),
            Part::text("first draft"),
        ]
    );
    assert!(
        McpRef::in_message(history.get(1).unwrap()),
        "the stored message keeps the reference"
    );

    // The resource changes: the next call is sent it as it is now.
    let set = ToolCall::new("s1", "py_set_note", r#"{"text": "second draft"}"#);
    assert!(!mcp.execute(&set, &cx()).await.is_error);
    let again = references.expand(&history).await.unwrap().to_vec();
    assert_eq!(again[1].parts[2], Part::text("second draft"));

    // A prompt: its messages, then what else the message said.
    let prompt = McpRef::Prompt(McpPromptRef {
        server: "py".into(),
        name: "review".into(),
        arguments: json!({"code": "fn main() {}"})
            .as_object()
            .cloned()
            .unwrap(),
    });
    let started = History::from(vec![Message::with_parts(
        Role::User,
        vec![prompt.to_part(), Part::text("Be brief.")],
    )]);
    let sent = references.expand(&started).await.unwrap().to_vec();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0].text(), "Review this Rust code:\nfn main() {}");
    assert_eq!(sent[1].text(), "Be brief.");

    // What cannot be filled in says why.
    let broken = History::from(vec![Message::with_parts(
        Role::User,
        vec![resource("nope", "mem://x"), resource("py", "mem://nothing")],
    )]);
    let sent = references.expand(&broken).await.unwrap().to_vec();
    let text = sent[0].text();
    assert!(
        text.contains("MCP server 'nope' is not one of this agent's (py)"),
        "{text}"
    );
    assert!(
        text.contains("the resource mem://nothing of MCP server 'py' could not be read"),
        "{text}"
    );
    mcp.shutdown().await.unwrap();
}
