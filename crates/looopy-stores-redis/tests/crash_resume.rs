//! A process killed in the middle of a turn is replaced by another that
//! resumes the turn from the Redis checkpoint: no message lost, no completed
//! tool call run twice.
//!
//! The killed process is this test binary run again (`current_exe()`) with
//! only [`child_process_role`] selected and `LOOOPY_CRASH_REDIS_CONFIG` (the
//! stores' settings as JSON: one server or a cluster) set: it
//! runs a turn whose model asks for one tool, then for three at once, the
//! third of which hangs. Tools append their name to a file when they run, so
//! runs are counted across processes. The parent waits until the checkpoint
//! shows two completed results of the batch, SIGKILLs the child, and resumes
//! the turn in its own process with fresh connections.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    History, LlmResponse, Message, Role, TaskState, ToolCall, ToolDefinition, ToolError,
    ToolProvider, ToolResult, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_stores_redis::RedisConfig;
use looopy_testkit::ScriptedLlm;
use support::cluster::ClusterConfig;

const CONFIG_ENV: &str = "LOOOPY_CRASH_REDIS_CONFIG";
const RUNS_ENV: &str = "LOOOPY_CRASH_RUNS_FILE";
const TASK: &str = "crash-task";
const CONTEXT: &str = "crash-ctx";
const TOOLS: [&str; 4] = ["first", "a", "b", "c"];

/// Tools that write their name to a file when they run; `hang` never return.
struct FileTools {
    runs: PathBuf,
    hang: &'static [&'static str],
}

#[async_trait]
impl ToolProvider for FileTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(TOOLS
            .iter()
            // Idempotent: a resumed turn runs a call cut off by the kill again.
            .map(|n| {
                ToolDefinition::without_parameters(*n, format!("the {n} tool")).idempotent(true)
            })
            .collect())
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.runs)
            .unwrap();
        file.write_all(format!("{}\n", call.name).as_bytes())
            .unwrap();
        file.sync_data().unwrap();
        if self.hang.contains(&call.name.as_str()) {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        ToolResult::text(&call.id, format!("result {}", call.name))
    }
}

fn runs_of(file: &Path, tool: &str) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == tool)
        .count()
}

fn cx() -> TurnContext {
    TurnContext::new(TASK, CONTEXT)
}

/// The child's part; does nothing in a normal test run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_role() {
    let Ok(config) = std::env::var(CONFIG_ENV) else {
        return;
    };
    let config: RedisConfig = serde_json::from_str(&config).unwrap();
    let runs = PathBuf::from(std::env::var(RUNS_ENV).unwrap());
    let stores = looopy_stores_redis::connect(config).await.unwrap();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("c0", "first", "{}")],
        ))
        .respond(LlmResponse::tool_calls(
            "",
            vec![
                ToolCall::new("ca", "a", "{}"),
                ToolCall::new("cb", "b", "{}"),
                ToolCall::new("cc", "c", "{}"),
            ],
        ));
    let agent = AgentLoop::builder(llm)
        .tools(FileTools { runs, hang: &["c"] })
        .task_store(stores.checkpoints.clone())
        .build();
    let mut events = agent.start_turn(History::from(vec![Message::user("go")]), cx());
    while events.next().await.is_some() {}
    panic!("the turn must hang in tool c until the parent kills this process");
}

/// Kills the child if the test fails before it does.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_mid_batch_resumes_from_redis_in_a_new_process() {
    let redis = support::redis();
    killed_mid_batch_then_resumed(support::config(redis.url())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_mid_batch_resumes_from_a_redis_cluster_in_a_new_process() {
    let Some(cluster) = support::cluster::cluster() else {
        return;
    };
    killed_mid_batch_then_resumed(cluster.config()).await;
}

async fn killed_mid_batch_then_resumed(config: RedisConfig) {
    let runs = std::env::temp_dir().join(format!("{}-runs.log", config.key_prefix));
    let _ = std::fs::remove_file(&runs);
    let mut child = Killed(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "crash_resume::child_process_role",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CONFIG_ENV, serde_json::to_string(&config).unwrap())
            .env(RUNS_ENV, &runs)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );

    // Wait for the checkpoint that records a and b done, c still running.
    let observer = support::stores(config.clone()).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let at_kill = loop {
        if let Some(cp) = observer.checkpoints.load(TASK).await.unwrap()
            && cp.completed_tool_results.len() == 2
        {
            break cp;
        }
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("the child exited before the checkpoint ({status})");
        }
        assert!(Instant::now() < deadline, "no checkpoint with two results");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    child.0.kill().unwrap(); // SIGKILL
    let status = child.0.wait().unwrap();
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "the child was killed, not ended");
    }

    // What the dead process left: the batch in flight, a and b done.
    assert_eq!(at_kill.state, TaskState::Working);
    let kinds: Vec<Role> = at_kill.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        kinds,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    let mut done: Vec<&str> = at_kill
        .completed_tool_results
        .iter()
        .map(|r| r.tool_call_id.as_str())
        .collect();
    done.sort();
    assert_eq!(done, ["ca", "cb"]);
    for tool in TOOLS {
        assert_eq!(runs_of(&runs, tool), 1, "{tool} ran once before the kill");
    }

    // The replacement process: new pool, new store, a model that finishes.
    let stores = looopy_stores_redis::connect(config).await.unwrap();
    let llm = ScriptedLlm::new().respond(LlmResponse::text("all done"));
    let agent = AgentLoop::builder(llm.clone())
        .tools(FileTools {
            runs: runs.clone(),
            hang: &[],
        })
        .task_store(stores.checkpoints.clone())
        .build();
    let stream = agent.resume(cx());
    let handle = stream.handle();
    let (events, _) = stream.collect_all().await;
    let last = events.last().unwrap();
    assert!(last.is_final());
    assert_eq!(last.state(), Some(TaskState::Completed));

    // Every message is there, in order, each result once.
    let history = handle.outcome().unwrap().history;
    let summary: Vec<(Role, String)> = history.iter().map(|m| (m.role, m.text())).collect();
    let tool = |s: &str| (Role::Tool, format!("result {s}"));
    assert_eq!(
        summary,
        [
            (Role::User, "go".to_owned()),
            (Role::Assistant, String::new()),
            tool("first"),
            (Role::Assistant, String::new()),
            tool("a"),
            tool("b"),
            tool("c"),
            (Role::Assistant, "all done".to_owned()),
        ]
    );
    let calls: Vec<&str> = history
        .get(3)
        .unwrap()
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(calls, ["ca", "cb", "cc"]);
    let answered: Vec<&str> = history
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(answered, ["c0", "ca", "cb", "cc"]);
    assert_eq!(
        llm.requests()[0]
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count(),
        4,
        "the model saw every result"
    );

    // Completed calls ran exactly once across both processes; c, cut off by
    // the kill, ran once more to complete.
    for tool in ["first", "a", "b"] {
        assert_eq!(runs_of(&runs, tool), 1, "{tool} must not run again");
    }
    assert_eq!(runs_of(&runs, "c"), 2, "c is run again, once");

    // The final checkpoint in Redis says the same.
    let saved = observer.checkpoints.load(TASK).await.unwrap().unwrap();
    assert_eq!(saved.state, TaskState::Completed);
    assert_eq!(saved.messages.to_vec(), history.to_vec());
    observer.checkpoints.delete(TASK).await.unwrap();
    let _ = std::fs::remove_file(&runs);
}
