//! Typed local tools: schema, arguments, results, errors, panics, context.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use looopy_core::{AuthContext, ToolCall, ToolDefinition, ToolProvider, ToolResult, TurnContext};
use looopy_tools::{LocalTools, NoArgs, ToolFnError};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Order {
    /// Who orders.
    customer: Customer,
    /// How many.
    quantity: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Customer {
    name: String,
    email: Option<String>,
}

#[derive(serde::Serialize)]
struct Receipt {
    total: u32,
    items: Vec<&'static str>,
}

fn cx() -> TurnContext {
    TurnContext::new("task-1", "ctx-1")
}

fn tools() -> LocalTools {
    LocalTools::new()
        .tool(
            "add",
            "Adds two numbers",
            |args: AddArgs, _cx: TurnContext| async move { Ok::<_, ToolFnError>(args.a + args.b) },
        )
        .sync_tool("greet", "Greets", |_: NoArgs, _cx: &TurnContext| {
            Ok::<_, ToolFnError>("hello")
        })
        .sync_tool(
            "order",
            "Places an order",
            |args: Order, _cx: &TurnContext| {
                Ok::<_, ToolFnError>(Receipt {
                    total: args.quantity * 3,
                    items: vec!["tea"],
                })
            },
        )
        .tool(
            "fails",
            "Always fails",
            |_: NoArgs, _cx: TurnContext| async move {
                Err::<(), _>(ToolFnError::new("the database is down"))
            },
        )
        .sync_tool("parse", "Parses", |_: NoArgs, _cx: &TurnContext| {
            let n: i32 = "x".parse()?;
            Ok::<_, ToolFnError>(n)
        })
        .tool(
            "panics",
            "Panics",
            |_: NoArgs, _cx: TurnContext| async move {
                if true {
                    panic!("kaboom");
                }
                Ok::<_, ToolFnError>(())
            },
        )
        .sync_tool("panics_sync", "Panics", |_: NoArgs, _cx: &TurnContext| {
            let v: Vec<u8> = Vec::new();
            Ok::<_, ToolFnError>(v[3])
        })
        .tool(
            "whoami",
            "Reports the caller",
            |_: NoArgs, cx: TurnContext| async move {
                let auth = cx.auth.ok_or_else(|| ToolFnError::new("anonymous"))?;
                Ok::<_, ToolFnError>(json!({
                    "principal": auth.principal,
                    "credentials": auth.credentials,
                    "task": &*cx.task_id,
                    "context": &*cx.context_id,
                }))
            },
        )
}

async fn run(name: &str, args: &str) -> ToolResult {
    tools()
        .execute(&ToolCall::new("call-1", name, args), &cx())
        .await
}

fn definition(defs: &[ToolDefinition], name: &str) -> ToolDefinition {
    defs.iter().find(|d| d.name == name).unwrap().clone()
}

#[tokio::test]
async fn schemas_are_generated_from_the_argument_types() {
    let defs = tools().tools(&cx()).await.unwrap();
    assert_eq!(defs.len(), 8);
    let add = definition(&defs, "add");
    assert_eq!(add.description, "Adds two numbers");
    assert_eq!(add.parameters["type"], "object");
    assert_eq!(add.parameters["properties"]["a"]["type"], "number");
    assert_eq!(
        add.parameters["properties"]["a"]["description"],
        "The first number."
    );
    assert_eq!(add.parameters["required"], json!(["a", "b"]));
    assert!(add.parameters.get("$schema").is_none());

    // Nested structs are inlined: no $ref for the model to resolve.
    let order = definition(&defs, "order");
    let text = order.parameters.to_string();
    assert!(!text.contains("$ref"), "{text}");
    assert_eq!(
        order.parameters["properties"]["customer"]["properties"]["name"]["type"],
        "string"
    );

    let greet = definition(&defs, "greet");
    assert_eq!(greet.parameters["type"], "object");
}

#[tokio::test]
async fn results_are_plain_text_or_json_text() {
    let sum = run("add", r#"{"a": 2, "b": 3.5}"#).await;
    assert!(!sum.is_error);
    assert_eq!(sum.tool_call_id, "call-1");
    assert_eq!(sum.text_content(), "5.5");

    assert_eq!(run("greet", "").await.text_content(), "hello");
    assert_eq!(run("greet", "{}").await.text_content(), "hello");

    let receipt = run("order", r#"{"customer": {"name": "Ann"}, "quantity": 2}"#).await;
    let value: Value = serde_json::from_str(&receipt.text_content()).unwrap();
    assert_eq!(value, json!({"total": 6, "items": ["tea"]}));
}

#[tokio::test]
async fn bad_arguments_tell_the_model_what_was_wrong() {
    let missing = run("add", r#"{"a": 2}"#).await;
    assert!(missing.is_error);
    let text = missing.text_content();
    assert!(
        text.starts_with("Error: invalid arguments for 'add'"),
        "{text}"
    );
    assert!(text.contains("missing field `b`"), "{text}");

    let wrong_type = run("add", r#"{"a": "two", "b": 1}"#).await;
    let text = wrong_type.text_content();
    assert!(wrong_type.is_error);
    assert!(text.contains("field `a`"), "{text}");
    assert!(text.contains("invalid type: string \"two\""), "{text}");

    let nested = run("order", r#"{"customer": {"name": 5}, "quantity": 1}"#).await;
    let text = nested.text_content();
    assert!(nested.is_error);
    assert!(text.contains("field `customer.name`"), "{text}");

    let not_json = run("add", "a=1").await;
    assert!(not_json.is_error);
    assert!(not_json.text_content().contains("invalid arguments"));
}

#[tokio::test]
async fn errors_become_error_results() {
    let failed = run("fails", "{}").await;
    assert!(failed.is_error);
    assert_eq!(failed.text_content(), "Error: the database is down");

    let parsed = run("parse", "{}").await;
    assert!(parsed.is_error);
    assert!(parsed.text_content().contains("invalid digit"));

    let unknown = run("nope", "{}").await;
    assert!(unknown.is_error);
    assert!(unknown.text_content().contains("Unknown tool 'nope'"));
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_siblings_still_work() {
    let tools = tools();
    let panicked = tools
        .execute(&ToolCall::new("p1", "panics", "{}"), &cx())
        .await;
    assert!(panicked.is_error);
    assert_eq!(panicked.tool_call_id, "p1");
    assert!(panicked.text_content().contains("kaboom"));
    assert!(panicked.text_content().contains("'panics' panicked"));

    let sync = tools
        .execute(&ToolCall::new("p2", "panics_sync", "{}"), &cx())
        .await;
    assert!(sync.is_error);
    assert!(
        sync.text_content().contains("index out of bounds"),
        "{}",
        sync.text_content()
    );

    // Concurrent siblings are unaffected.
    let (c1, c2) = (
        ToolCall::new("s1", "panics", "{}"),
        ToolCall::new("s2", "add", r#"{"a":1,"b":1}"#),
    );
    let cx = cx();
    let (a, b) = tokio::join!(tools.execute(&c1, &cx), tools.execute(&c2, &cx));
    assert!(a.is_error);
    assert!(!b.is_error);
    assert_eq!(b.text_content(), "2.0");
}

#[tokio::test]
async fn the_tool_sees_the_turns_auth_and_ids() {
    let tools = tools();
    let anonymous = tools
        .execute(&ToolCall::new("w0", "whoami", "{}"), &cx())
        .await;
    assert!(anonymous.is_error);

    let cx = cx().with_auth(AuthContext::new("alice").with_credentials("token-1"));
    let me = tools
        .execute(&ToolCall::new("w1", "whoami", "{}"), &cx)
        .await;
    assert!(!me.is_error);
    let value: Value = serde_json::from_str(&me.text_content()).unwrap();
    assert_eq!(
        value,
        json!({"principal": "alice", "credentials": "token-1", "task": "task-1", "context": "ctx-1"})
    );
}

#[tokio::test]
async fn a_later_registration_replaces_an_earlier_one() {
    let tools = LocalTools::new()
        .sync_tool("t", "first", |_: NoArgs, _: &TurnContext| {
            Ok::<_, String>(1)
        })
        .sync_tool("t", "second", |_: NoArgs, _: &TurnContext| {
            Ok::<_, String>(2)
        });
    assert_eq!(tools.len(), 1);
    let defs = tools.tools(&cx()).await.unwrap();
    assert_eq!(defs[0].description, "second");
    let r = tools.execute(&ToolCall::new("1", "t", ""), &cx()).await;
    assert_eq!(r.text_content(), "2");
}

#[tokio::test]
async fn raw_tools_build_their_own_result() {
    let tools = LocalTools::new().raw_tool(
        ToolDefinition::without_parameters("raw", "Raw"),
        |call: ToolCall, _cx: TurnContext| async move {
            let mut r = ToolResult::text(call.id, "raw!");
            r.metadata.insert("k".into(), json!(1));
            r
        },
    );
    let r = tools.execute(&ToolCall::new("1", "raw", ""), &cx()).await;
    assert_eq!(r.text_content(), "raw!");
    assert_eq!(r.metadata["k"], 1);
}

#[tokio::test]
async fn a_tool_is_idempotent_only_when_declared_so() {
    let tools = LocalTools::new()
        .idempotent() // no tool yet: nothing happens
        .sync_tool("lookup", "Reads", |_: NoArgs, _: &TurnContext| {
            Ok::<_, String>(1)
        })
        .idempotent()
        .sync_tool("send", "Sends", |_: NoArgs, _: &TurnContext| {
            Ok::<_, String>(2)
        })
        .raw_tool(
            ToolDefinition::without_parameters("raw_read", "Reads raw").idempotent(true),
            |call: ToolCall, _cx: TurnContext| async move { ToolResult::text(call.id, "r") },
        )
        // Replacing `send` marks the new `send`, not the tool added last.
        .sync_tool("send", "Sends again", |_: NoArgs, _: &TurnContext| {
            Ok::<_, String>(3)
        })
        .idempotent();
    let defs = tools.tools(&cx()).await.unwrap();
    let flagged: Vec<(&str, bool)> = defs
        .iter()
        .map(|d| (d.name.as_str(), d.idempotent))
        .collect();
    assert_eq!(
        flagged,
        [("lookup", true), ("send", true), ("raw_read", true)]
    );
    assert_eq!(definition(&defs, "send").description, "Sends again");
    let plain =
        LocalTools::new().sync_tool("x", "X", |_: NoArgs, _: &TurnContext| Ok::<_, String>(0));
    assert!(!plain.tools(&cx()).await.unwrap()[0].idempotent);
    // The flagged tool still runs.
    let r = tools.execute(&ToolCall::new("1", "send", ""), &cx()).await;
    assert_eq!(r.text_content(), "3");
}

#[tokio::test]
async fn a_tool_reads_its_calls_idempotency_key_from_the_context() {
    let tools = LocalTools::new().sync_tool("key", "Key", |_: NoArgs, cx: &TurnContext| {
        Ok::<_, String>(cx.idempotency_key().unwrap_or("none").to_owned())
    });
    let r = tools
        .execute(
            &ToolCall::new("call-7", "key", ""),
            &cx().with_call_id("call-7"),
        )
        .await;
    assert_eq!(r.text_content(), "call-7");
    let r = tools
        .execute(&ToolCall::new("call-8", "key", ""), &cx())
        .await;
    assert_eq!(r.text_content(), "none", "outside the loop nobody sets it");
}
