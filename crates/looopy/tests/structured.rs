//! Typed final answers against the OpenAI fixture server: the schema sent as
//! a strict `response_format`, the answer read into the type, a malformed
//! answer sent back with what failed.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use looopy::openai::{LiteLlmConfig, LiteLlmProvider};
use looopy::prelude::*;
use looopy::structured::StructuredError;
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde::Deserialize;
use serde_json::json;

/// A city and how many live there.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct City {
    /// Its name.
    name: String,
    /// Inhabitants, when known.
    population: Option<u64>,
}

fn provider(f: &OpenAiFixture, native: bool) -> LiteLlmProvider {
    LiteLlmProvider::new(
        LiteLlmConfig::new(f.base_url(), "m")
            .with_request_timeout(Duration::from_secs(20))
            .with_native_structured_output(native),
    )
    .unwrap()
}

fn ask() -> LlmRequest {
    LlmRequest {
        messages: vec![Message::user("The capital of Norway?")].into(),
        ..LlmRequest::default()
    }
}

fn cx() -> TurnContext {
    TurnContext::new("task", "ctx")
}

#[tokio::test]
async fn the_schema_is_sent_strict_and_the_answer_is_typed() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion(
        r#"{"name": "Oslo", "population": 709000}"#,
    )));
    let answer = StructuredOutput::<City>::new()
        .call(&provider(&f, true), ask(), &cx())
        .await
        .unwrap();
    assert_eq!(
        answer.value,
        City {
            name: "Oslo".into(),
            population: Some(709000)
        }
    );
    assert_eq!(answer.attempts, 1);
    let body = f.last_request().unwrap().body;
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "City");
    assert_eq!(format["json_schema"]["strict"], true);
    let schema = &format["json_schema"]["schema"];
    // Strict mode: every property required, the optional one nullable.
    assert_eq!(schema["required"], json!(["name", "population"]));
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["population"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(schema["properties"]["name"]["description"], "Its name.");
}

#[tokio::test]
async fn a_malformed_answer_is_sent_back_with_what_failed() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion(r#"{"name": 42}"#)));
    f.push(FixtureReply::json(openai::completion(
        "```json\n{\"name\": \"Oslo\", \"population\": null}\n```",
    )));
    // An endpoint without native schemas: the schema goes into the prompt.
    let answer = StructuredOutput::<City>::new()
        .call(&provider(&f, false), ask(), &cx())
        .await
        .unwrap();
    assert_eq!(answer.value.name, "Oslo");
    assert_eq!(answer.attempts, 2);
    assert_eq!(answer.usage.input_tokens, 20, "both attempts counted");
    let requests = f.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert!(first.get("response_format").is_none());
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains(r#""additionalProperties":false"#)
    );
    // The retry holds the bad answer and a correction naming the field.
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], r#"{"name": 42}"#);
    assert_eq!(messages[3]["role"], "user");
    let correction = messages[3]["content"].as_str().unwrap();
    assert!(
        correction.contains("at `name`: invalid type: integer `42`"),
        "{correction}"
    );
}

#[tokio::test]
async fn retries_are_bounded() {
    let f = OpenAiFixture::start().await.unwrap();
    for _ in 0..3 {
        f.push(FixtureReply::json(openai::completion("not json")));
    }
    let error = StructuredOutput::<City>::new()
        .with_max_retries(1)
        .call(&provider(&f, true), ask(), &cx())
        .await
        .unwrap_err();
    match error {
        StructuredError::Invalid { attempts, text, .. } => {
            assert_eq!(attempts, 2);
            assert_eq!(text, "not json");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(f.served(), 2, "one call and one retry");
}

#[tokio::test]
async fn a_turn_with_tools_ends_in_a_typed_answer() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::tool_calls_completion(&[(
        "c1",
        "population",
        r#"{"city": "Oslo"}"#,
    )])));
    f.push(FixtureReply::json(openai::completion(
        r#"{"population": 709000}"#,
    )));
    f.push(FixtureReply::json(openai::completion(
        r#"{"name": "Oslo", "population": 709000}"#,
    )));

    #[derive(Deserialize, JsonSchema)]
    struct Lookup {
        city: String,
    }
    let tools = LocalTools::new().sync_tool(
        "population",
        "Inhabitants of a city",
        |args: Lookup, _cx: &TurnContext| {
            Ok::<_, ToolFnError>(if args.city == "Oslo" { 709000 } else { 0 })
        },
    );
    let agent = AgentLoop::builder(provider(&f, true))
        .tools(tools)
        .llm_layer(ResponseFormatLayer)
        .build();
    let turn = agent
        .run_structured::<City>(vec![Message::user("Tell me about Oslo")].into(), cx())
        .await
        .unwrap();
    assert_eq!(turn.value.population, Some(709000));
    assert_eq!(turn.attempts, 2, "the first answer lacked a field");
    let requests = f.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(
            r.body["response_format"]["json_schema"]["name"], "City",
            "every call of the turn"
        );
    }
    let last = requests[2].body["messages"].as_array().unwrap();
    let correction = last.last().unwrap()["content"].as_str().unwrap();
    assert!(correction.contains("missing field `name`"), "{correction}");
}
