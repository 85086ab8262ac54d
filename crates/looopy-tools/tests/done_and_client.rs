//! The done tool and client tools.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use looopy_core::client_tool::CLIENT_TOOLS_KEY;
use looopy_core::{
    Message, Part, Role, ToolCall, ToolDefinition, ToolProvider, ToolSignal, TurnContext,
};
use looopy_tools::{
    ClientToolResult, ClientTools, DoneTool, PendingClientCall, client_results,
    split_client_results,
};
use serde_json::{Map, Value, json};

fn cx() -> TurnContext {
    TurnContext::new("t", "c")
}

#[tokio::test]
async fn the_done_tool_ends_the_turn_with_the_message() {
    let done = DoneTool::new();
    let defs = done.tools(&cx()).await.unwrap();
    assert_eq!(defs.len(), 1);
    assert_eq!(defs[0].name, "done");
    assert_eq!(
        defs[0].parameters["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(defs[0].parameters["required"], json!(["message"]));

    let r = done
        .execute(
            &ToolCall::new("d1", "done", r#"{"message": "All set."}"#),
            &cx(),
        )
        .await;
    assert!(!r.is_error);
    assert_eq!(r.tool_call_id, "d1");
    assert_eq!(
        r.signal,
        Some(ToolSignal::Done {
            message: Some("All set.".into())
        })
    );

    // The model can always finish, even without a message.
    for args in ["", "{}", "not json", r#"{"message": 3}"#] {
        let r = done
            .execute(&ToolCall::new("d2", "done", args), &cx())
            .await;
        assert_eq!(r.signal, Some(ToolSignal::Done { message: None }), "{args}");
    }

    let renamed = DoneTool::new().with_name("finish");
    assert_eq!(renamed.definition().name, "finish");
    // Running it again after a crash only asks again to end the turn.
    assert!(renamed.definition().idempotent);
    let r = renamed
        .execute(&ToolCall::new("d3", "done", "{}"), &cx())
        .await;
    assert!(r.is_error);
    assert!(r.signal.is_none());
}

fn declared() -> Map<String, Value> {
    let mut metadata = Map::new();
    metadata.insert(
        CLIENT_TOOLS_KEY.into(),
        json!([
            {
                "name": "get_location",
                "description": "The user's location",
                "parameters": {"type": "object", "properties": {"precise": {"type": "boolean"}}}
            },
            {
                "type": "function",
                "function": {"name": "confirm", "description": "Asks the user to confirm"}
            }
        ]),
    );
    metadata
}

#[tokio::test]
async fn client_tools_are_read_from_message_metadata() {
    let mut message = Message::user("where am I?");
    message.metadata = declared();
    let tools = ClientTools::from_message(&message).unwrap();
    let defs = tools.tools(&cx()).await.unwrap();
    assert_eq!(defs.len(), 2);
    assert_eq!(defs[0].name, "get_location");
    assert_eq!(
        defs[0].parameters["properties"]["precise"]["type"],
        "boolean"
    );
    assert_eq!(defs[1].name, "confirm");
    assert_eq!(defs[1].description, "Asks the user to confirm");
    // A declaration without parameters gets the empty object schema.
    assert_eq!(defs[1].parameters["type"], "object");
    // Executing a client tool only prepares the question to the client: a
    // resumed turn may do it again.
    assert!(defs.iter().all(|d| d.idempotent));

    assert!(ClientTools::from_metadata(&Map::new()).unwrap().is_empty());

    let dup = json!([{"name": "a"}, {"name": "a"}]);
    assert!(matches!(
        ClientTools::from_value(&dup),
        Err(e) if e.message.contains("duplicate tool name 'a'")
    ));
    assert!(ClientTools::from_value(&json!({"name": "a"})).is_err());
    assert!(ClientTools::from_value(&json!([{"description": "no name"}])).is_err());
}

#[tokio::test]
async fn executing_a_client_tool_asks_for_input() {
    let tools = ClientTools::new([ToolDefinition::without_parameters("confirm", "Confirm")]);
    let r = tools
        .execute(
            &ToolCall::new("call-7", "confirm", r#"{"question": "Proceed?"}"#),
            &cx(),
        )
        .await;
    assert!(!r.is_error);
    assert_eq!(r.signal, Some(ToolSignal::InputRequired));
    assert_eq!(r.source, Some(looopy_core::ResultSource::Client));
    let pending = PendingClientCall::from_result(&r);
    assert_eq!(
        pending,
        vec![PendingClientCall {
            tool_call_id: "call-7".into(),
            name: "confirm".into(),
            arguments: json!({"question": "Proceed?"}),
        }]
    );
    assert_eq!(
        r.content[0],
        Part::data(
            json!({"toolCallId": "call-7", "name": "confirm", "arguments": {"question": "Proceed?"}})
        )
    );

    let unknown = tools
        .execute(&ToolCall::new("x", "other", "{}"), &cx())
        .await;
    assert!(unknown.is_error);
    assert!(unknown.signal.is_none());
}

#[test]
fn client_results_become_tool_messages() {
    let mut message = Message::with_parts(
        Role::User,
        vec![
            Part::data(json!({"toolCallId": "call-7", "result": "yes"})),
            Part::data(json!({"toolCallId": "call-8", "result": {"lat": 59.9, "lon": 10.7}})),
            Part::data(json!({"toolCallId": "call-9", "error": "the user closed the dialog"})),
            Part::data(json!({"unrelated": true})),
            Part::text("and here is a follow-up question"),
        ],
    );
    message.message_id = "m-1".into();

    let results = client_results(&message);
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0],
        ClientToolResult {
            tool_call_id: "call-7".into(),
            result: json!("yes"),
            is_error: false
        }
    );
    assert!(results[2].is_error);

    let (tool_messages, rest) = split_client_results(message);
    assert_eq!(tool_messages.len(), 3);
    assert!(tool_messages.iter().all(|m| m.role == Role::Tool));
    assert_eq!(tool_messages[0].tool_call_id.as_deref(), Some("call-7"));
    assert_eq!(tool_messages[0].text(), "yes");
    let loc: Value = serde_json::from_str(&tool_messages[1].text()).unwrap();
    assert_eq!(loc, json!({"lat": 59.9, "lon": 10.7}));
    assert!(!tool_messages[1].is_error());
    assert!(tool_messages[2].is_error());
    assert_eq!(tool_messages[2].text(), "Error: the user closed the dialog");
    assert_eq!(
        tool_messages[2].source,
        Some(looopy_core::ResultSource::Client)
    );

    let rest = rest.unwrap();
    assert_eq!(rest.message_id, "m-1");
    assert_eq!(rest.parts.len(), 2);
    assert_eq!(rest.text(), "and here is a follow-up question");

    // A message of results only leaves nothing behind.
    let only = Message::with_parts(
        Role::User,
        vec![Part::data(
            json!({"toolCallId": "c", "result": 1, "isError": true}),
        )],
    );
    let (tool_messages, rest) = split_client_results(only);
    assert!(rest.is_none());
    assert!(tool_messages[0].is_error());
    assert_eq!(tool_messages[0].text(), "Error: 1");

    // A message without results is left alone.
    let plain = Message::user("hi");
    let (tool_messages, rest) = split_client_results(plain.clone());
    assert!(tool_messages.is_empty());
    assert_eq!(rest.unwrap(), plain);
}
