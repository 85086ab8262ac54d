//! The wrapper provider for timeouts (with cancellation), and the kinds of
//! failed results local tools give. Permissions are a loop hook
//! (`looopy_loop::hooks::Hook::approve_tool`), tested there.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use looopy_core::{ToolCall, ToolError, ToolFailure, ToolProvider, TurnContext};
use looopy_loop::layers::{TimeoutTools, ToolProviderExt};
use looopy_tools::{LocalTools, NoArgs, ToolFnError};

/// Sets its flag when dropped: shows that a tool's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    seconds: u64,
}

fn sleepy(dropped: Arc<AtomicBool>, finished: Arc<AtomicBool>) -> LocalTools {
    LocalTools::new().tool(
        "sleep",
        "Sleeps",
        move |args: SleepArgs, _cx: TurnContext| {
            let dropped = Arc::clone(&dropped);
            let finished = Arc::clone(&finished);
            async move {
                let _guard = DropFlag(dropped);
                tokio::time::sleep(Duration::from_secs(args.seconds)).await;
                finished.store(true, Ordering::SeqCst);
                Ok::<_, ToolFnError>("slept")
            }
        },
    )
}

fn cx() -> TurnContext {
    TurnContext::new("t", "c")
}

#[tokio::test(start_paused = true)]
async fn a_call_past_the_default_limit_is_an_error_and_its_future_is_dropped() {
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let tools = TimeoutTools::new(sleepy(dropped.clone(), finished.clone()));
    assert_eq!(tools.limit_for("sleep"), Some(Duration::from_secs(30)));

    let r = tools
        .execute(&ToolCall::new("1", "sleep", r#"{"seconds": 3600}"#), &cx())
        .await;
    assert!(r.is_error);
    assert_eq!(r.failure, Some(ToolFailure::Timeout));
    let expected = ToolError::Timeout {
        tool: "sleep".into(),
        after_ms: 30_000,
    };
    assert_eq!(r.text_content(), format!("Error: {expected}"));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's future was not dropped"
    );
    assert!(!finished.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn a_call_within_its_limit_returns_its_result() {
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let tools = sleepy(dropped, finished.clone()).with_timeouts();
    let r = tools
        .execute(&ToolCall::new("1", "sleep", r#"{"seconds": 5}"#), &cx())
        .await;
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(r.failure, None);
    assert_eq!(r.text_content(), "slept");
    assert!(finished.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn per_tool_limits_override_the_default() {
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let tools = TimeoutTools::new(sleepy(dropped.clone(), finished.clone()))
        .with_default(Duration::from_secs(1))
        .with_timeout("sleep", Duration::from_secs(120));
    let r = tools
        .execute(&ToolCall::new("1", "sleep", r#"{"seconds": 60}"#), &cx())
        .await;
    assert!(!r.is_error, "{}", r.text_content());

    let short = TimeoutTools::new(sleepy(dropped.clone(), finished))
        .with_timeout("sleep", Duration::from_millis(1500));
    let r = short
        .execute(&ToolCall::new("2", "sleep", r#"{"seconds": 60}"#), &cx())
        .await;
    assert_eq!(r.failure, Some(ToolFailure::Timeout));
    assert!(r.text_content().contains("timed out after 1500 ms"));
    assert!(dropped.load(Ordering::SeqCst));

    let unlimited = TimeoutTools::new(LocalTools::new()).without_timeout("x");
    assert_eq!(unlimited.limit_for("x"), None);
    assert_eq!(unlimited.limit_for("y"), Some(Duration::from_secs(30)));
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_turn_ends_the_call() {
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let tools = TimeoutTools::new(sleepy(dropped.clone(), finished.clone()));
    let cx = cx();
    let cancel = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        cancel.cancel();
    });
    let r = tools
        .execute(&ToolCall::new("1", "sleep", r#"{"seconds": 20}"#), &cx)
        .await;
    assert!(r.is_error);
    assert_eq!(r.failure, Some(ToolFailure::Cancelled));
    assert_eq!(r.text_content(), format!("Error: {}", ToolError::Cancelled));
    assert!(dropped.load(Ordering::SeqCst));
    assert!(!finished.load(Ordering::SeqCst));
}

/// Arguments a local tool cannot read, and a tool that panics: kinds the
/// loop and events report.
#[tokio::test]
async fn local_tools_give_typed_failures() {
    let tools = LocalTools::new()
        .sync_tool("need", "Needs seconds", |a: SleepArgs, _: &TurnContext| {
            Ok::<_, ToolFnError>(a.seconds)
        })
        .sync_tool("fail", "Fails", |_: NoArgs, _: &TurnContext| {
            Err::<u8, _>(ToolFnError::new("no luck"))
        })
        .sync_tool(
            "boom",
            "Panics",
            |_: NoArgs, _: &TurnContext| -> Result<u8, ToolFnError> { panic!("kaboom") },
        );
    let kind = |r: &looopy_core::ToolResult| (r.is_error, r.failure);
    let r = tools
        .execute(&ToolCall::new("1", "need", "{not json"), &cx())
        .await;
    assert_eq!(kind(&r), (true, Some(ToolFailure::BadArguments)));
    let r = tools
        .execute(&ToolCall::new("2", "need", r#"{"seconds": "x"}"#), &cx())
        .await;
    assert_eq!(kind(&r), (true, Some(ToolFailure::BadArguments)));
    let r = tools
        .execute(&ToolCall::new("3", "fail", "{}"), &cx())
        .await;
    assert_eq!(kind(&r), (true, Some(ToolFailure::Failed)));
    assert_eq!(r.text_content(), "Error: no luck");
    let r = tools
        .execute(&ToolCall::new("4", "boom", "{}"), &cx())
        .await;
    assert_eq!(kind(&r), (true, Some(ToolFailure::Panicked)));
    let r = tools
        .execute(&ToolCall::new("5", "nope", "{}"), &cx())
        .await;
    assert_eq!(kind(&r), (true, Some(ToolFailure::UnknownTool)));
    let r = tools
        .execute(&ToolCall::new("6", "need", r#"{"seconds": 1}"#), &cx())
        .await;
    assert_eq!(kind(&r), (false, None));
}
