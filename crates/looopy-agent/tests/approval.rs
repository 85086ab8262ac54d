//! Human approval of tool calls through an Agent: the turn asks, the next
//! message approves, denies or edits, and the turn goes on (also on another
//! Agent over the same stores, as after a restart).
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use looopy_agent::{Agent, AgentError, TurnEnd};
use looopy_core::approval::{ApprovalDecision, ApprovalRequest, Decision};
use looopy_core::store::Stores;
use looopy_core::{
    LlmResponse, Message, Part, Role, TaskState, ToolCall, ToolDefinition, ToolError, ToolFailure,
    ToolProvider, ToolResult, TurnContext,
};
use looopy_loop::hooks::{Approval, ApproveFn};
use looopy_testkit::ScriptedLlm;
use serde_json::json;
use support::*;

/// `delete_file {path}` (records each path it deletes) and `lookup`.
#[derive(Clone, Default)]
struct Files {
    deleted: Arc<Mutex<Vec<String>>>,
}

impl Files {
    fn deleted(&self) -> Vec<String> {
        self.deleted.lock().unwrap().clone()
    }
}

#[async_trait]
impl ToolProvider for Files {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![
            ToolDefinition::without_parameters("delete_file", "Deletes a file"),
            ToolDefinition::without_parameters("lookup", "Looks up"),
        ])
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        match call.name.as_str() {
            "delete_file" => match call.parsed_arguments()["path"].as_str() {
                Some(path) => {
                    self.deleted.lock().unwrap().push(path.to_owned());
                    ToolResult::text(&call.id, format!("deleted {path}"))
                }
                None => ToolResult::error(&call.id, "invalid arguments: `path` is required"),
            },
            _ => ToolResult::text(&call.id, format!("result of {}", call.id)),
        }
    }
}

/// The model deletes `a.txt` and looks something up in one response, then
/// answers.
fn model() -> ScriptedLlm {
    ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![
                ToolCall::new("d1", "delete_file", r#"{"path":"a.txt"}"#),
                ToolCall::new("l1", "lookup", "{}"),
            ],
        ))
        .respond(LlmResponse::text("done"))
}

fn agent(context: &str, llm: &ScriptedLlm, stores: &Stores, files: &Files) -> Agent {
    builder(context, llm, stores)
        .tools(files.clone())
        .require_approval(["delete_file"])
        .build()
        .unwrap()
}

fn decision(d: &ApprovalDecision) -> Message {
    Message::with_parts(Role::User, vec![d.to_part()])
}

/// The tool message answering `id` in the last request the model got.
fn result_sent(llm: &ScriptedLlm, id: &str) -> Message {
    let request = llm.requests().pop().unwrap();
    request
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some(id))
        .cloned()
        .unwrap_or_else(|| panic!("no result for {id} sent"))
}

/// Asks, checks what the caller and the store see, returns the agent.
async fn asked(context: &str, llm: &ScriptedLlm, stores: &Stores, files: &Files) -> Agent {
    let agent = agent(context, llm, stores, files);
    let (events, s) = turn(&agent, "clean up").await;
    assert_eq!(s.end, TurnEnd::InputRequired);
    assert_eq!(s.state, TaskState::InputRequired);
    let pending: Vec<&str> = s.pending_tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(pending, vec!["d1"], "only the asked call waits");
    let meta = final_metadata(&events);
    assert_eq!(meta["approvalRequests"][0]["toolCallId"], "d1");
    assert_eq!(meta["approvalRequests"][0]["name"], "delete_file");
    assert_eq!(meta["approvalRequests"][0]["arguments"]["path"], "a.txt");
    let question = meta["approvalRequests"][0]["question"].as_str().unwrap();
    assert!(question.contains("delete_file"), "{question}");
    let message = s.message.unwrap();
    assert!(message.text().contains(question), "{}", message.text());
    assert!(
        files.deleted().is_empty(),
        "nothing deleted before approval"
    );
    // The other call of the response ran and its result is stored; the
    // request is recorded on the stored assistant message.
    let stored = stores.messages.load(context).await.unwrap();
    assert_eq!(stored.len(), 3, "user, calls, lookup result");
    assert_eq!(stored[2].tool_call_id.as_deref(), Some("l1"));
    assert_eq!(ApprovalRequest::recorded(&stored[1])[0].tool_call_id, "d1");
    agent
}

#[tokio::test]
async fn an_approved_call_runs_with_its_arguments_and_the_turn_goes_on() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-approve", &llm, &stores, &files).await;
    let s = send(
        &agent,
        decision(&ApprovalDecision {
            tool_call_id: "d1".into(),
            decision: Decision::Approve,
        }),
    )
    .await;
    assert_eq!(s.state, TaskState::Completed, "{:?}", s.message);
    assert_eq!(files.deleted(), vec!["a.txt"]);
    assert_eq!(result_sent(&llm, "d1").text(), "deleted a.txt");
    assert_eq!(result_sent(&llm, "l1").text(), "result of l1");
    let stored = stores.messages.load("ap-approve").await.unwrap();
    assert_tool_pairs_intact(&stored);
    assert_eq!(stored.last().unwrap().text(), "done");
}

#[tokio::test]
async fn an_edited_call_runs_with_the_new_arguments() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-edit", &llm, &stores, &files).await;
    let edit = Message::with_parts(
        Role::User,
        vec![Part::data(json!({"approval": {
            "toolCallId": "d1", "decision": "edit", "arguments": {"path": "b.txt"}
        }}))],
    );
    let s = send(&agent, edit).await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(files.deleted(), vec!["b.txt"]);
    assert_eq!(result_sent(&llm, "d1").text(), "deleted b.txt");
}

#[tokio::test]
async fn edited_arguments_are_checked_by_the_tool_as_any_call() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-edit-bad", &llm, &stores, &files).await;
    let edit = Message::with_parts(
        Role::User,
        vec![Part::data(json!({"approval": {
            "toolCallId": "d1", "decision": "edit", "arguments": {"file": "b.txt"}
        }}))],
    );
    let s = send(&agent, edit).await;
    assert_eq!(s.state, TaskState::Completed);
    assert!(files.deleted().is_empty());
    let sent = result_sent(&llm, "d1");
    assert!(sent.is_error(), "{}", sent.text());
    assert!(
        sent.text().contains("`path` is required"),
        "{}",
        sent.text()
    );
}

#[tokio::test]
async fn a_denied_call_gives_the_model_a_denied_result_with_the_reason() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-deny", &llm, &stores, &files).await;
    let s = send(
        &agent,
        decision(&ApprovalDecision {
            tool_call_id: "d1".into(),
            decision: Decision::Deny {
                reason: Some("keep that file".into()),
            },
        }),
    )
    .await;
    assert_eq!(s.state, TaskState::Completed);
    assert!(files.deleted().is_empty());
    let sent = result_sent(&llm, "d1");
    assert_eq!(sent.tool_failure(), Some(ToolFailure::Denied));
    assert!(
        sent.text().contains("Tool call denied: keep that file"),
        "{}",
        sent.text()
    );
}

#[tokio::test]
async fn plain_yes_approves_and_plain_no_denies_a_single_pending_call() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-yes", &llm, &stores, &files).await;
    let s = send(&agent, Message::user("Yes")).await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(files.deleted(), vec!["a.txt"]);
    let request = llm.requests().pop().unwrap();
    assert!(
        !request
            .messages
            .iter()
            .any(|m| m.role == Role::User && m.text() == "Yes"),
        "the answer is consumed, not sent to the model"
    );

    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-no", &llm, &stores, &files).await;
    let s = send(&agent, Message::user("no")).await;
    assert_eq!(s.state, TaskState::Completed);
    assert!(files.deleted().is_empty());
    assert_eq!(
        result_sent(&llm, "d1").tool_failure(),
        Some(ToolFailure::Denied)
    );
}

#[tokio::test]
async fn other_text_denies_the_pending_call_and_reaches_the_model() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-other", &llm, &stores, &files).await;
    let s = send(&agent, Message::user("what would that delete?")).await;
    assert_eq!(s.state, TaskState::Completed);
    assert!(files.deleted().is_empty());
    let sent = result_sent(&llm, "d1");
    assert_eq!(sent.tool_failure(), Some(ToolFailure::Denied));
    assert!(sent.text().contains("did not approve"), "{}", sent.text());
    let request = llm.requests().pop().unwrap();
    assert_eq!(
        request.messages.last().unwrap().text(),
        "what would that delete?"
    );
}

#[tokio::test]
async fn text_beside_an_approval_follows_the_calls_result() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-then", &llm, &stores, &files).await;
    let mut message = decision(&ApprovalDecision {
        tool_call_id: "d1".into(),
        decision: Decision::Approve,
    });
    message.parts.push(Part::text("and tell me when done"));
    let s = send(&agent, message).await;
    assert_eq!(s.state, TaskState::Completed);
    let sent = llm.requests().pop().unwrap().messages.to_vec();
    assert_tool_pairs_intact(&sent);
    assert_eq!(sent.last().unwrap().text(), "and tell me when done");
    let stored = stores.messages.load("ap-then").await.unwrap();
    assert_tool_pairs_intact(&stored);
    assert!(stored.iter().any(|m| m.text() == "and tell me when done"));
}

#[tokio::test]
async fn bad_decisions_are_typed_errors_and_leave_the_call_waiting() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let agent = asked("ap-bad", &llm, &stores, &files).await;
    let malformed = Message::with_parts(
        Role::User,
        vec![Part::data(
            json!({"approval": {"toolCallId": "d1", "decision": "maybe"}}),
        )],
    );
    let e = agent
        .execute_turn(Some(malformed), None)
        .await
        .err()
        .unwrap();
    assert!(matches!(e, AgentError::InvalidApproval(_)), "{e:?}");
    assert!(e.to_string().contains("invalid approval decision"), "{e}");
    let unknown = decision(&ApprovalDecision {
        tool_call_id: "l1".into(),
        decision: Decision::Approve,
    });
    let e = agent.execute_turn(Some(unknown), None).await.err().unwrap();
    assert_eq!(
        e,
        AgentError::NotAwaitingApproval {
            tool_call_id: "l1".into()
        }
    );
    // Nothing was saved: the call still waits and can be approved.
    assert_eq!(stores.messages.load("ap-bad").await.unwrap().len(), 3);
    let s = send(&agent, Message::user("y")).await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(files.deleted(), vec!["a.txt"]);
}

#[tokio::test]
async fn another_agent_on_the_same_stores_finishes_the_turn() {
    let (stores, files, llm) = (looopy_stores_memory::stores(), Files::default(), model());
    let first = asked("ap-restart", &llm, &stores, &files).await;
    drop(first);
    // A new Agent (as a new process would make) knows nothing but the stores.
    let second = agent("ap-restart", &llm, &stores, &files);
    let s = send(
        &second,
        decision(&ApprovalDecision {
            tool_call_id: "d1".into(),
            decision: Decision::Approve,
        }),
    )
    .await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(files.deleted(), vec!["a.txt"]);
}

#[tokio::test]
async fn a_policy_closure_can_ask() {
    let (stores, files) = (looopy_stores_memory::stores(), Files::default());
    let llm = model();
    let agent = builder("ap-closure", &llm, &stores)
        .tools(files.clone())
        .configure_loop(|b| {
            b.hook(ApproveFn::new("ask-for-a", |call, _| {
                if call.parsed_arguments()["path"] == "a.txt" {
                    Approval::ask("Really delete a.txt?")
                } else {
                    Approval::Allow
                }
            }))
        })
        .build()
        .unwrap();
    let (events, s) = turn(&agent, "clean up").await;
    assert_eq!(s.state, TaskState::InputRequired);
    assert_eq!(
        final_metadata(&events)["approvalRequests"][0]["question"],
        "Really delete a.txt?"
    );
    let s = send(&agent, Message::user("yes")).await;
    assert_eq!(s.state, TaskState::Completed);
    assert_eq!(files.deleted(), vec!["a.txt"]);
}
