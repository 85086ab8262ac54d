//! Hooks, the event catalogue, and pause / resume inside a turn.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    EventPayload, History, LlmError, LlmRequest, LlmResponse, Message, Role, TaskState, ToolCall,
    ToolFailure, ToolOutcome, ToolResult, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_loop::hooks::{
    AfterTurn, Approval, ApproveFn, BeforeLlm, BeforeTool, BeforeTurn, EndingTurn, Hook,
    HookContext, HookError, HookFailureMode, HookPoints,
};
use looopy_testkit::ScriptedLlm;
use support::*;

fn cx() -> TurnContext {
    TurnContext::new("task-h", "ctx-h")
}

fn user(text: &str) -> History {
    History::from(vec![Message::user(text)])
}

type Log = Arc<Mutex<Vec<String>>>;

/// Records every point it sees, and sets the temperature to its number.
struct Recorder {
    name: String,
    log: Log,
    temperature: f32,
    /// The points it says it implements.
    points: HookPoints,
}

#[async_trait]
impl Hook for Recorder {
    fn name(&self) -> &str {
        &self.name
    }
    fn points(&self) -> HookPoints {
        self.points
    }
    async fn before_turn(&self, _cx: &HookContext, _h: &History) -> Result<BeforeTurn, HookError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:before_turn", self.name));
        Ok(BeforeTurn::unchanged())
    }
    async fn before_llm(
        &self,
        _cx: &HookContext,
        req: &mut LlmRequest,
    ) -> Result<BeforeLlm, HookError> {
        self.log.lock().unwrap().push(format!(
            "{}:before_llm saw {:?}",
            self.name, req.temperature
        ));
        req.temperature = Some(self.temperature);
        Ok(BeforeLlm::Continue)
    }
    async fn after_llm(&self, _cx: &HookContext, _r: &mut LlmResponse) -> Result<(), HookError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:after_llm", self.name));
        Ok(())
    }
    async fn after_turn(&self, _cx: &HookContext, s: &EndingTurn) -> Result<AfterTurn, HookError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:after_turn {}", self.name, s.reason));
        Ok(AfterTurn::Keep)
    }
}

#[tokio::test]
async fn hooks_run_in_registration_order_and_see_each_others_changes() {
    let log = Log::default();
    let llm = ScriptedLlm::new().respond(LlmResponse::text("hi"));
    let agent = AgentLoop::builder(llm.clone())
        .hook(Recorder {
            name: "a".into(),
            log: log.clone(),
            temperature: 0.1,
            points: HookPoints::ALL,
        })
        .hook(Recorder {
            name: "b".into(),
            log: log.clone(),
            temperature: 0.7,
            points: HookPoints::default(),
        })
        .build();
    drain(agent.start_turn(user("x"), cx())).await;
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "a:before_turn",
            "b:before_turn",
            "a:before_llm saw None",
            "b:before_llm saw Some(0.1)",
            "a:after_llm",
            "b:after_llm",
            "a:after_turn finished",
            "b:after_turn finished",
        ]
    );
    assert_eq!(llm.requests()[0].temperature, Some(0.7));
}

#[tokio::test]
async fn a_hook_is_called_only_at_the_points_it_names() {
    let log = Log::default();
    let llm = ScriptedLlm::new().respond(LlmResponse::text("hi"));
    let agent = AgentLoop::builder(llm.clone())
        .hook(Recorder {
            name: "a".into(),
            log: log.clone(),
            temperature: 0.1,
            points: HookPoints::AFTER_LLM | HookPoints::AFTER_TURN,
        })
        .hook(Recorder {
            name: "none".into(),
            log: log.clone(),
            temperature: 0.9,
            points: HookPoints::NONE,
        })
        .build();
    drain(agent.start_turn(user("x"), cx())).await;
    assert_eq!(
        *log.lock().unwrap(),
        vec!["a:after_llm", "a:after_turn finished"]
    );
    // Neither hook's `before_llm` ran: the request kept its temperature.
    assert_eq!(llm.requests()[0].temperature, None);
}

/// A hook configured per point by closures-free fields, for the tool tests.
#[derive(Default)]
struct ToolGate {
    deny: Option<String>,
    rewrite_to: Option<String>,
    mock: Option<String>,
    suffix: Option<String>,
    skip_llm_with: Option<String>,
    fail_at: Option<&'static str>,
}

#[async_trait]
impl Hook for ToolGate {
    fn name(&self) -> &str {
        "gate"
    }
    async fn before_llm(
        &self,
        _cx: &HookContext,
        _r: &mut LlmRequest,
    ) -> Result<BeforeLlm, HookError> {
        if self.fail_at == Some("before_llm") {
            return Err(HookError::new("before_llm broke"));
        }
        Ok(match &self.skip_llm_with {
            Some(text) => BeforeLlm::Skip(Box::new(LlmResponse::text(text.clone()))),
            None => BeforeLlm::Continue,
        })
    }
    async fn approve_tool(&self, _cx: &HookContext, _c: &ToolCall) -> Result<Approval, HookError> {
        Ok(match &self.deny {
            Some(reason) => Approval::Deny(reason.clone()),
            None => Approval::Allow,
        })
    }
    async fn before_tool(
        &self,
        _cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<BeforeTool, HookError> {
        if let Some(args) = &self.rewrite_to {
            call.arguments = args.clone();
        }
        Ok(match &self.mock {
            Some(text) => BeforeTool::Skip(ToolResult::text("ignored", text.clone())),
            None => BeforeTool::Continue,
        })
    }
    async fn after_tool(
        &self,
        _cx: &HookContext,
        _c: &ToolCall,
        result: &mut ToolResult,
    ) -> Result<(), HookError> {
        if self.fail_at == Some("after_tool") {
            return Err(HookError::new("after_tool broke"));
        }
        if let Some(s) = &self.suffix {
            result.content.push(looopy_core::Part::text(s.clone()));
        }
        Ok(())
    }
}

async fn one_tool_turn(
    gate: ToolGate,
    mode: HookFailureMode,
) -> (Vec<looopy_core::AgentEvent>, History, ScriptedLlm) {
    let tools = FnTools::new().tool("echo", |call, _| async move {
        ToolResult::text(&call.id, format!("ran with {}", call.arguments))
    });
    let llm = calls_then(&[("c1", "echo", "{\"v\":1}")], "end");
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .hook(gate)
        .hook_failure_mode(mode)
        .build();
    let stream = agent.start_turn(user("x"), cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    (events, handle.history(), llm)
}

fn tool_text(history: &History) -> String {
    history
        .iter()
        .find(|m| m.role == Role::Tool)
        .map(Message::text)
        .unwrap()
}

#[tokio::test]
async fn approval_can_deny_with_a_reason_the_model_reads() {
    let (events, history, _) = one_tool_turn(
        ToolGate {
            deny: Some("not allowed here".into()),
            ..Default::default()
        },
        HookFailureMode::FailTurn,
    )
    .await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(
        tool_text(&history),
        "Error: Tool call denied: not allowed here"
    );
    // The kind, on the stored message and on the event.
    let stored = history.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(stored.tool_failure(), Some(ToolFailure::Denied));
    let (result, outcome) = events
        .iter()
        .find_map(|e| match &*e.payload {
            EventPayload::ToolComplete {
                result, outcome, ..
            } => Some((result.clone(), *outcome)),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.failure, Some(ToolFailure::Denied));
    assert_eq!(outcome, ToolOutcome::Error);
}

#[tokio::test]
async fn an_approve_fn_sees_the_principal_and_denies_without_running() {
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = ran.clone();
    let tools = FnTools::new().tool("rm", move |call, _| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move { ToolResult::text(&call.id, "removed") }
    });
    let call = || LlmResponse::tool_calls("", vec![ToolCall::new("r", "rm", "{}")]);
    let agent = AgentLoop::builder(
        ScriptedLlm::new()
            .respond(call())
            .respond(LlmResponse::text("ok"))
            .respond(call())
            .respond(LlmResponse::text("ok")),
    )
    .tools(tools)
    .hook(ApproveFn::new(
        "admins-only",
        |call: &ToolCall, cx: &HookContext| {
            let admin = cx
                .turn
                .auth
                .as_ref()
                .is_some_and(|a| a.scopes.iter().any(|s| s == "admin"));
            if call.name == "rm" && !admin {
                Approval::deny("")
            } else {
                Approval::Allow
            }
        },
    ))
    .build();
    let stream = agent.start_turn(user("rm"), cx());
    let handle = stream.handle();
    drain(stream).await;
    let history = handle.history();
    assert_eq!(
        tool_text(&history),
        "Error: Tool call denied: permission denied for tool 'rm'"
    );
    let stored = history.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(stored.tool_failure(), Some(ToolFailure::Denied));
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 0);

    let mut auth = looopy_core::AuthContext::new("root");
    auth.scopes.push("admin".into());
    let stream = agent.start_turn(user("rm"), cx().with_auth(auth));
    let handle = stream.handle();
    drain(stream).await;
    assert_eq!(tool_text(&handle.history()), "removed");
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn before_tool_can_rewrite_arguments_or_give_a_mock_result() {
    let (_, history, _) = one_tool_turn(
        ToolGate {
            rewrite_to: Some("{\"v\":2}".into()),
            ..Default::default()
        },
        HookFailureMode::FailTurn,
    )
    .await;
    assert_eq!(tool_text(&history), "ran with {\"v\":2}");
    let (events, history, _) = one_tool_turn(
        ToolGate {
            mock: Some("mocked".into()),
            ..Default::default()
        },
        HookFailureMode::FailTurn,
    )
    .await;
    assert_eq!(tool_text(&history), "mocked");
    let tool_msg = history.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(
        tool_msg.tool_call_id.as_deref(),
        Some("c1"),
        "a mock answers the real call id"
    );
    assert!(events.iter().any(|e| e.kind() == "internal:tool-detected"));
}

#[tokio::test]
async fn after_tool_can_modify_the_result() {
    let (_, history, _) = one_tool_turn(
        ToolGate {
            suffix: Some(" (checked)".into()),
            ..Default::default()
        },
        HookFailureMode::FailTurn,
    )
    .await;
    assert_eq!(tool_text(&history), "ran with {\"v\":1} (checked)");
}

#[tokio::test]
async fn before_llm_can_answer_in_the_models_place() {
    let llm = ScriptedLlm::new();
    let agent = AgentLoop::builder(llm.clone())
        .hook(ToolGate {
            skip_llm_with: Some("cached answer".into()),
            ..Default::default()
        })
        .build();
    let events = drain(agent.start_turn(user("x"), cx())).await;
    assert_eq!(llm.request_count(), 0);
    let EventPayload::StatusUpdate { status, .. } = &*final_event(&events).payload else {
        unreachable!()
    };
    assert_eq!(status.message.as_ref().unwrap().text(), "cached answer");
}

fn hook_errors(events: &[looopy_core::AgentEvent]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::HookError { point, fatal, .. } => Some((point.clone(), *fatal)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_failing_hook_fails_the_turn_by_default() {
    let (events, _, llm) = one_tool_turn(
        ToolGate {
            fail_at: Some("before_llm"),
            ..Default::default()
        },
        HookFailureMode::FailTurn,
    )
    .await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert_eq!(hook_errors(&events), vec![("before_llm".to_owned(), true)]);
    assert_eq!(llm.request_count(), 0);
    let meta = final_meta(&events);
    assert_eq!(meta["error"]["type"], "hook");
    assert!(
        meta["error"]["message"]
            .as_str()
            .unwrap()
            .contains("before_llm broke")
    );

    let (events, _, _) = one_tool_turn(
        ToolGate {
            fail_at: Some("after_tool"),
            ..Default::default()
        },
        HookFailureMode::FailTurn,
    )
    .await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert_eq!(hook_errors(&events), vec![("after_tool".to_owned(), true)]);
}

#[tokio::test]
async fn a_failing_hook_is_reported_and_ignored_when_configured() {
    let (events, history, llm) = one_tool_turn(
        ToolGate {
            fail_at: Some("after_tool"),
            ..Default::default()
        },
        HookFailureMode::Ignore,
    )
    .await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(hook_errors(&events), vec![("after_tool".to_owned(), false)]);
    assert_eq!(tool_text(&history), "ran with {\"v\":1}");
    assert_eq!(llm.request_count(), 2);
}

/// Pauses at the first pause check.
struct PauseOnce(std::sync::atomic::AtomicBool);

#[async_trait]
impl Hook for PauseOnce {
    async fn pause_check(&self, _cx: &HookContext) -> Result<Option<String>, HookError> {
        Ok((!self.0.swap(true, std::sync::atomic::Ordering::SeqCst))
            .then(|| "needs review".to_owned()))
    }
}

#[tokio::test]
async fn a_paused_turn_waits_before_the_model_call_and_goes_on_when_resumed() {
    let llm = ScriptedLlm::new().respond(LlmResponse::text("after the pause"));
    let agent = AgentLoop::builder(llm.clone())
        .hook(PauseOnce(Default::default()))
        .build();
    let mut stream = agent.start_turn(user("x"), cx());
    let handle = stream.handle();
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        let paused = e.kind() == "internal:execution-paused";
        events.push(e);
        if paused {
            break;
        }
    }
    assert!(handle.is_paused());
    // Nothing moves while paused.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), stream.next())
            .await
            .is_err()
    );
    assert_eq!(llm.request_count(), 0);
    handle.resume();
    events.extend(drain(stream).await);
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    let k = kinds(&events);
    let resumed = k
        .iter()
        .position(|k| *k == "internal:execution-resumed")
        .unwrap();
    let call = k.iter().position(|k| *k == "internal:llm-call").unwrap();
    assert!(resumed < call);
}

#[tokio::test]
async fn a_pause_requested_during_tools_holds_the_next_model_call_and_cancel_still_works() {
    let tools = FnTools::new().echo("slow", Duration::from_millis(50));
    let llm = calls_then(&[("c", "slow", "{}")], "never");
    let agent = AgentLoop::builder(llm.clone()).tools(tools).build();
    let cx = cx();
    let token = cx.cancel.clone();
    let mut stream = agent.start_turn(user("x"), cx);
    let handle = stream.handle();
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        let start = e.kind() == "internal:tool-start";
        events.push(e);
        if start {
            handle.pause("operator");
        }
        if events.last().unwrap().kind() == "internal:execution-paused" {
            break;
        }
    }
    assert_eq!(
        llm.request_count(),
        1,
        "the tool finished but the next model call waits"
    );
    token.cancel();
    events.extend(drain(stream).await);
    assert_eq!(final_event(&events).state(), Some(TaskState::Canceled));
    assert_eq!(llm.request_count(), 1);
}

/// Asks for more work every time.
struct Nag(Arc<std::sync::atomic::AtomicU32>);

#[async_trait]
impl Hook for Nag {
    async fn incomplete_work(
        &self,
        _cx: &HookContext,
        s: &EndingTurn,
    ) -> Result<Option<String>, HookError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(Some(format!(
            "You said '{}'. Check your TODO list.",
            s.final_text.clone().unwrap_or_default()
        )))
    }
}

#[tokio::test]
async fn the_incomplete_work_hook_sends_bounded_extra_prompts() {
    let asked = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("first"))
        .respond(LlmResponse::text("second"))
        .respond(LlmResponse::text("third"));
    let agent = AgentLoop::builder(llm.clone())
        .hook(Nag(asked.clone()))
        .build();
    let events = drain(agent.start_turn(user("x"), cx())).await;
    assert_eq!(
        llm.request_count(),
        3,
        "two extra prompts (the default bound), then the turn ends"
    );
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
    let second = &llm.requests()[1];
    let prompt = second.messages.last().unwrap();
    assert_eq!(prompt.role, Role::User);
    assert_eq!(prompt.text(), "You said 'first'. Check your TODO list.");
    let EventPayload::StatusUpdate { status, .. } = &*final_event(&events).payload else {
        unreachable!()
    };
    assert_eq!(status.message.as_ref().unwrap().text(), "third");
}

#[tokio::test]
async fn the_catalogue_reports_llm_errors_and_the_execution_end() {
    let llm = ScriptedLlm::new().fail(LlmError::RateLimited {
        message: "slow down".into(),
        retry_after: None,
    });
    // Without the default retry, which would try the rate-limited call again.
    let agent = AgentLoop::builder(llm).without_default_layers().build();
    let events = drain(agent.start_turn(user("x"), cx())).await;
    let llm_error = events.iter().find_map(|e| match &*e.payload {
        EventPayload::LlmError {
            error_type,
            message,
            ..
        } => Some((error_type.clone(), message.clone())),
        _ => None,
    });
    assert_eq!(llm_error.unwrap().0, "rate_limited");
    let end = events.iter().find_map(|e| match &*e.payload {
        EventPayload::ExecutionEnd { state, error, .. } => Some((*state, error.clone())),
        _ => None,
    });
    let (state, error) = end.unwrap();
    assert_eq!(state, TaskState::Failed);
    assert!(error.unwrap().contains("slow down"));
}

#[tokio::test]
async fn an_ask_ends_the_turn_input_required_and_approved_calls_run_without_asking_again() {
    use looopy_core::approval::ApprovalRequest;
    use looopy_loop::ApprovedCalls;
    use looopy_loop::hooks::RequireApproval;

    let ran: Log = Arc::default();
    let seen = ran.clone();
    let tools = FnTools::new()
        .tool("rm", move |call, _| {
            seen.lock().unwrap().push(call.arguments.clone());
            async move { ToolResult::text(&call.id, "removed") }
        })
        .tool(
            "ls",
            |call, _| async move { ToolResult::text(&call.id, "a b") },
        );
    let llm = calls_then(&[("r1", "rm", r#"{"f":"a"}"#), ("l1", "ls", "{}")], "gone");
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .hook(RequireApproval::new(["rm"]))
        .build();
    let stream = agent.start_turn(user("x"), cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    let last = final_event(&events);
    assert_eq!(last.state(), Some(TaskState::InputRequired));
    assert!(ran.lock().unwrap().is_empty(), "rm did not run");
    let history = handle.history();
    // The asked call waits; the other one ran and its result is kept.
    let assistant = history.iter().find(|m| m.role == Role::Assistant).unwrap();
    let requests = ApprovalRequest::recorded(assistant);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tool_call_id, "r1");
    assert_eq!(
        requests[0].question,
        r#"Allow rm with arguments {"f":"a"}?"#
    );
    assert_eq!(tool_text(&history), "a b");
    let EventPayload::StatusUpdate { status, .. } = &*last.payload else {
        panic!("{last:?}")
    };
    assert_eq!(
        ApprovalRequest::in_message(status.message.as_ref().unwrap()),
        requests
    );

    // The next turn runs the approved call (edited) without asking again.
    let approved = ApprovedCalls {
        calls: vec![ToolCall::new("r1", "rm", r#"{"f":"b"}"#)],
        then: Some(Message::user("thanks")),
        ..Default::default()
    };
    let stream = agent.start_turn_approved(
        history,
        cx(),
        looopy_loop::TurnSettings::default(),
        approved,
    );
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(*ran.lock().unwrap(), vec![r#"{"f":"b"}"#.to_owned()]);
    let sent = llm.requests().pop().unwrap().messages.to_vec();
    let result = sent
        .iter()
        .position(|m| m.tool_call_id.as_deref() == Some("r1"))
        .unwrap();
    assert_eq!(sent[result].text(), "removed");
    assert_eq!(
        sent.last().unwrap().text(),
        "thanks",
        "then follows the results"
    );
    assert!(result < sent.len() - 1);
}
