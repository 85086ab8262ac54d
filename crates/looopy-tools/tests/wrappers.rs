//! The wrapper providers: timeouts (with cancellation) and permissions.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use looopy_core::{ToolCall, ToolContext, ToolError, ToolProvider};
use looopy_tools::{
    LocalTools, NoArgs, Permission, PermissionTools, SyncHook, TimeoutTools, ToolFnError,
    ToolProviderExt,
};
use serde_json::json;

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
        move |args: SleepArgs, _cx: ToolContext| {
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

fn cx() -> ToolContext {
    ToolContext::new("t", "c")
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
    assert!(r.is_error);
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
    assert_eq!(r.text_content(), format!("Error: {}", ToolError::Cancelled));
    assert!(dropped.load(Ordering::SeqCst));
    assert!(!finished.load(Ordering::SeqCst));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct PathArgs {
    path: String,
}

fn files(runs: Arc<AtomicUsize>) -> LocalTools {
    LocalTools::new()
        .sync_tool(
            "read",
            "Reads a file",
            move |args: PathArgs, _: &ToolContext| {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolFnError>(format!("contents of {}", args.path))
            },
        )
        .sync_tool("list", "Lists", |_: NoArgs, _: &ToolContext| {
            Ok::<_, ToolFnError>("a b c")
        })
}

#[tokio::test]
async fn the_hook_allows_denies_and_rewrites() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = PermissionTools::new(
        files(runs.clone()),
        |call: ToolCall, _cx: ToolContext| async move {
            let args = call.parsed_arguments();
            match args["path"].as_str() {
                Some(p) if p.starts_with("/etc") => Permission::deny("reading /etc is not allowed"),
                Some(p) if p.starts_with('~') => {
                    Permission::Rewrite(json!({ "path": p.replacen('~', "/home/alice", 1) }))
                }
                _ => Permission::Allow,
            }
        },
    );

    // Listing passes through.
    assert_eq!(tools.tools(&cx()).await.unwrap().len(), 2);

    let allowed = tools
        .execute(&ToolCall::new("1", "read", r#"{"path": "/tmp/x"}"#), &cx())
        .await;
    assert!(!allowed.is_error);
    assert_eq!(allowed.text_content(), "contents of /tmp/x");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let denied = tools
        .execute(
            &ToolCall::new("2", "read", r#"{"path": "/etc/shadow"}"#),
            &cx(),
        )
        .await;
    assert!(denied.is_error);
    assert_eq!(denied.tool_call_id, "2");
    assert_eq!(denied.text_content(), "Error: reading /etc is not allowed");
    assert_eq!(denied.metadata["permission"], "denied");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a denied call must not run");

    let rewritten = tools
        .execute(&ToolCall::new("3", "read", r#"{"path": "~/notes"}"#), &cx())
        .await;
    assert!(!rewritten.is_error);
    assert_eq!(rewritten.tool_call_id, "3");
    assert_eq!(rewritten.text_content(), "contents of /home/alice/notes");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn sync_hooks_see_the_context_and_wrappers_chain() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = files(runs.clone())
        .with_permissions(SyncHook(|call: &ToolCall, cx: &ToolContext| {
            let admin = cx
                .auth
                .as_ref()
                .is_some_and(|a| a.scopes.iter().any(|s| s == "admin"));
            if call.name == "read" && !admin {
                Permission::Deny(String::new())
            } else {
                Permission::Allow
            }
        }))
        .with_timeouts();

    let denied = tools
        .execute(&ToolCall::new("1", "read", r#"{"path": "/x"}"#), &cx())
        .await;
    assert!(denied.is_error);
    assert_eq!(
        denied.text_content(),
        "Error: permission denied for tool 'read'"
    );

    let mut auth = looopy_core::AuthContext::new("root");
    auth.scopes.push("admin".into());
    let admin = cx().with_auth(auth);
    let allowed = tools
        .execute(&ToolCall::new("2", "read", r#"{"path": "/x"}"#), &admin)
        .await;
    assert!(!allowed.is_error);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let list = tools.execute(&ToolCall::new("3", "list", ""), &cx()).await;
    assert_eq!(list.text_content(), "a b c");
}
