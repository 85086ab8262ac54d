//! An MCP server's resources and prompts: read by the library, and the
//! resources offered to the model through the provider's two resource
//! tools. Against the Python fixture server and
//! `@modelcontextprotocol/server-everything`.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use crate::support;

use looopy_core::{Part, Role, ToolFailure, ToolProvider};
use looopy_tools::{McpToolProvider, StdioServer, ToolsError};
use support::{call, cx, stdio_provider};

#[tokio::test]
async fn resources_are_listed_and_read_as_text_and_files() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    let resources = mcp.resources().await.unwrap();
    let today = resources
        .iter()
        .find(|r| r.uri == "mem://notes/today")
        .unwrap();
    assert_eq!(today.name, "today");
    assert_eq!(today.description.as_deref(), Some("Today's notes."));
    assert_eq!(today.mime_type.as_deref(), Some("text/plain"));
    assert!(resources.iter().any(|r| r.uri == "mem://pixel.png"));

    let templates = mcp.resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1, "{templates:?}");
    assert_eq!(templates[0].uri_template, "mem://items/{item_id}");

    let text = mcp.read_resource("mem://notes/today").await.unwrap();
    assert_eq!(text, [Part::text("Buy milk; call Ada.")]);
    let filled = mcp.read_resource("mem://items/42").await.unwrap();
    assert_eq!(filled, [Part::text("item 42")]);

    let image = mcp.read_resource("mem://pixel.png").await.unwrap();
    let [Part::File { file }] = image.as_slice() else {
        panic!("{image:?}");
    };
    assert_eq!(file.mime_type.as_deref(), Some("image/png"));
    assert_eq!(file.uri.as_deref(), Some("mem://pixel.png"));
    assert!(file.bytes.as_deref().unwrap().starts_with("iVBORw0KGgo"));

    let missing = mcp.read_resource("mem://nothing").await.unwrap_err();
    assert!(
        matches!(&missing, ToolsError::McpRequest { server, message }
            if server == "py" && message.contains("mem://nothing")),
        "{missing:?}"
    );
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_model_lists_and_reads_resources_through_two_tools() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    let defs = mcp.tools(&cx()).await.unwrap();
    let read = defs.iter().find(|d| d.name == "py_read_resource").unwrap();
    assert_eq!(read.parameters["required"][0], "uri");

    let listing = call(&mcp, "1", "py_list_resources", "{}").await;
    assert!(!listing.is_error, "{}", listing.text_content());
    let text = listing.text_content();
    assert!(
        text.contains("- mem://notes/today (today, text/plain): Today's notes."),
        "{text}"
    );
    assert!(
        text.contains("- mem://items/{item_id} (item, text/plain): One item by id."),
        "{text}"
    );

    let r = call(
        &mcp,
        "2",
        "py_read_resource",
        r#"{"uri": "mem://notes/today"}"#,
    )
    .await;
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(r.tool_call_id, "2");
    assert_eq!(r.text_content(), "Buy milk; call Ada.");

    let r = call(
        &mcp,
        "3",
        "py_read_resource",
        r#"{"uri": "mem://pixel.png"}"#,
    )
    .await;
    assert!(
        matches!(r.content.as_slice(), [Part::File { .. }]),
        "{:?}",
        r.content
    );

    // Bad arguments and an unknown URI are error results the model reads.
    let r = call(&mcp, "4", "py_read_resource", r#"{"path": "x"}"#).await;
    assert!(r.is_error);
    assert_eq!(r.failure, Some(ToolFailure::BadArguments));
    assert!(r.text_content().contains("`uri`"), "{}", r.text_content());
    let r = call(&mcp, "5", "py_read_resource", r#"{"uri": "mem://nothing"}"#).await;
    assert!(r.is_error);
    assert!(
        r.text_content().contains("mem://nothing"),
        "{}",
        r.text_content()
    );
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_resource_tools_can_be_left_out() {
    let Some(python) = support::python() else {
        return;
    };
    let mcp = McpToolProvider::new(
        StdioServer::new(python)
            .arg(support::fixture_server().display().to_string())
            .arg("stdio"),
    )
    .without_resource_tools();
    let defs = mcp.tools(&cx()).await.unwrap();
    assert!(
        defs.iter().all(|d| !d.name.contains("resource")),
        "{defs:?}"
    );
    // The library still reads them.
    assert!(!mcp.resources().await.unwrap().is_empty());
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn prompts_are_listed_and_filled_in_as_messages() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    let prompts = mcp.prompts().await.unwrap();
    let review = prompts.iter().find(|p| p.name == "review").unwrap();
    assert_eq!(
        review.description.as_deref(),
        Some("Asks for a review of the code in a language.")
    );
    let args: Vec<(&str, bool)> = review
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(args, [("code", true), ("language", false)]);

    let filled = mcp
        .prompt(
            "review",
            [("code", "fn main() {}"), ("language", "Rust 2024")],
        )
        .await
        .unwrap();
    assert_eq!(filled.messages.len(), 1);
    assert_eq!(filled.messages[0].role, Role::User);
    assert_eq!(
        filled.messages[0].text(),
        "Review this Rust 2024 code:\nfn main() {}"
    );

    let two = mcp
        .prompt("chat_about", [("topic", "otters")])
        .await
        .unwrap();
    let roles: Vec<Role> = two.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant]);
    assert_eq!(two.messages[1].text(), "Gladly. What about otters?");

    // A missing required argument is the server's refusal, typed.
    let missing = mcp
        .prompt("review", std::iter::empty::<(String, String)>())
        .await
        .unwrap_err();
    assert!(
        matches!(missing, ToolsError::McpRequest { .. }),
        "{missing:?}"
    );
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn server_everything_offers_resources_and_prompts() {
    let Some(bin) = support::server_everything() else {
        return;
    };
    let mcp = McpToolProvider::new(StdioServer::new(&bin).arg("stdio"));
    let resources = mcp.resources().await.unwrap();
    assert!(!resources.is_empty());
    // Its static documents read as text, its blob template as a file.
    let text = mcp.read_resource(&resources[0].uri).await.unwrap();
    assert!(
        matches!(text.as_slice(), [Part::Text { text }] if !text.is_empty()),
        "{text:?}"
    );
    let templates = mcp.resource_templates().await.unwrap();
    let blob = templates
        .iter()
        .find(|t| t.uri_template.contains("/blob/"))
        .unwrap_or_else(|| panic!("no blob template in {templates:?}"));
    let uri = blob.uri_template.replace("{resourceId}", "1");
    let file = mcp.read_resource(&uri).await.unwrap();
    assert!(
        matches!(file.as_slice(), [Part::File { file }] if file.bytes.is_some()),
        "{file:?}"
    );
    let prompts = mcp.prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    let simple = prompts
        .iter()
        .find(|p| p.arguments.is_empty())
        .unwrap_or_else(|| panic!("no prompt without arguments in {names:?}"));
    let filled = mcp
        .prompt(&simple.name, std::iter::empty::<(String, String)>())
        .await
        .unwrap();
    assert!(!filled.messages.is_empty());
    assert!(!filled.messages[0].text().is_empty(), "{filled:?}");
    mcp.shutdown().await.unwrap();
}
