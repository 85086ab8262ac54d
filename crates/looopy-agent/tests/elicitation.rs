//! A tool's question to the person (`looopy_core::elicitation`) across two
//! turns of an Agent: the first ends `input-required` with the question;
//! the answer in the next message runs the call again with the answer as a
//! turn dependency, and the model reads the tool's result. Answers that do
//! not read as one, or that answer no waiting call, are refused before
//! anything is written.
#![allow(clippy::unwrap_used)]

use crate::support;

use async_trait::async_trait;
use looopy_agent::{AgentError, LifecycleState, TurnEnd};
use looopy_core::elicitation::{ElicitationAnswer, ElicitationAnswers, ElicitationRequest};
use looopy_core::{
    LlmResponse, Message, Part, Role, TaskState, ToolCall, ToolDefinition, ToolError, ToolProvider,
    ToolResult, ToolSignal, TurnContext,
};
use looopy_testkit::ScriptedLlm;
use serde_json::json;
use support::{assert_tool_pairs_intact, builder, send, turn};

/// A tool that asks how many before it orders: a question when its turn
/// carries no answer for the call, the order when it does.
struct Orders;

fn how_many(call: &ToolCall) -> ElicitationRequest {
    ElicitationRequest::new(
        &call.id,
        &call.name,
        "shop",
        "How many?",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    )
}

#[async_trait]
impl ToolProvider for Orders {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::new(
            "order",
            "Orders",
            json!({"type": "object"}),
        )])
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        let question = how_many(call);
        let answer = cx
            .deps
            .get::<ElicitationAnswers>()
            .and_then(|a| a.for_call(&call.id).cloned())
            .filter(|a| a.request_id == question.request_id);
        match answer.and_then(|a| a.content) {
            Some(content) => ToolResult::text(&call.id, format!("ordered {}", content["n"])),
            None => ToolResult {
                content: vec![question.to_part()],
                ..ToolResult::text(&call.id, "")
            }
            .with_signal(ToolSignal::InputRequired),
        }
    }
}

fn orders() -> LlmResponse {
    LlmResponse::tool_calls("", vec![ToolCall::new("o1", "order", "{}")])
}

fn answer(parts: Vec<Part>) -> Message {
    Message::with_parts(Role::User, parts)
}

#[tokio::test]
async fn the_answer_runs_the_call_again_and_the_model_reads_its_result() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(orders())
        .respond(LlmResponse::text("Ordered three."));
    let agent = builder("c-elicit", &llm, &stores)
        .tools(Orders)
        .build()
        .unwrap();
    let (_events, asked) = turn(&agent, "Order some.").await;
    assert_eq!(asked.state, TaskState::InputRequired);
    assert_eq!(asked.end, TurnEnd::InputRequired);
    let message = asked.message.unwrap();
    let questions = ElicitationRequest::in_message(&message);
    assert_eq!(questions.len(), 1, "{message:?}");
    assert_eq!(questions[0].message, "How many?");
    assert!(
        message.text().contains("order asks: How many?"),
        "{message:?}"
    );
    let pending: Vec<&str> = asked
        .pending_tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(pending, ["o1"]);

    // The answer, with a word for the model after it.
    let content = json!({"n": 3}).as_object().cloned().unwrap();
    let reply = answer(vec![
        ElicitationAnswer::accept(&questions[0], content).to_part(),
        Part::text("Thanks."),
    ]);
    let done = send(&agent, reply).await;
    assert_eq!(done.state, TaskState::Completed);
    let sent = llm.requests().pop().unwrap().messages.to_vec();
    assert_eq!(sent[2].role, Role::Tool);
    assert_eq!(sent[2].text(), "ordered 3");
    assert_eq!(sent[3].text(), "Thanks.");
    assert_tool_pairs_intact(&sent);
    let stored = stores.messages.load("c-elicit").await.unwrap();
    assert_eq!(stored.last().unwrap().text(), "Ordered three.");
    assert_tool_pairs_intact(&stored);
}

#[tokio::test]
async fn answers_that_do_not_read_or_answer_no_waiting_call_are_refused() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(orders());
    let agent = builder("c-elicit-bad", &llm, &stores)
        .tools(Orders)
        .build()
        .unwrap();
    let (_events, asked) = turn(&agent, "Order some.").await;
    let question = ElicitationRequest::in_message(&asked.message.unwrap()).remove(0);
    let stored = stores.messages.count("c-elicit-bad").await.unwrap();

    let elsewhere = ElicitationAnswer {
        tool_call_id: "nope".into(),
        ..ElicitationAnswer::decline(&question)
    };
    let e = agent
        .execute_turn(Some(answer(vec![elsewhere.to_part()])), None)
        .await
        .unwrap_err();
    assert_eq!(
        e,
        AgentError::NotAwaitingAnswer {
            tool_call_id: "nope".into()
        }
    );

    let malformed = Part::data(json!({"elicitation": {"toolCallId": "o1", "action": "maybe"}}));
    let e = agent
        .execute_turn(Some(answer(vec![malformed])), None)
        .await
        .unwrap_err();
    assert!(matches!(e, AgentError::InvalidElicitation(_)), "{e:?}");
    assert!(e.to_string().contains("invalid elicitation answer"), "{e}");

    assert_eq!(
        stores.messages.count("c-elicit-bad").await.unwrap(),
        stored,
        "nothing was written"
    );
    assert_eq!(agent.lifecycle(), LifecycleState::Ready);
}
