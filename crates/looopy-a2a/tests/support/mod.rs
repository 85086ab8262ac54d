//! Shared helpers of the integration tests: servers on 127.0.0.1:0, a
//! scripted turn runner, raw JSON-RPC and SSE over HTTP, the Python venvs.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_a2a::{
    A2aServer, A2aServerBuilder, AgentCardConfig, AgentRunner, RunnerError, TurnEvents,
    TurnRequest, TurnRunner,
};
use looopy_agent::Agent;
use looopy_core::store::Stores;
use looopy_core::{
    AgentEvent, Artifact, EventPayload, LlmResponse, Message, Part, TaskState, TaskStatus,
    ToolProvider, Usage,
};
use looopy_stores_memory::{MemoryEventLog, MemoryTaskRecordStore};
use looopy_testkit::ScriptedLlm;
use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, oneshot};

/// A running server; shuts down when dropped.
pub struct TestServer {
    pub url: String,
    pub events: Arc<MemoryEventLog>,
    pub tasks: Arc<MemoryTaskRecordStore>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// Stops the server and waits for its graceful shutdown.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            tokio::time::timeout(Duration::from_secs(20), done)
                .await
                .unwrap()
                .unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Stores shared by servers (as Redis would be between processes).
#[derive(Clone, Default)]
pub struct SharedStores {
    pub events: Arc<MemoryEventLog>,
    pub tasks: Arc<MemoryTaskRecordStore>,
}

pub fn builder(runner: impl TurnRunner, stores: &SharedStores) -> A2aServerBuilder {
    A2aServer::builder(runner, stores.events.clone(), stores.tasks.clone())
        .card(AgentCardConfig::new("Test agent", "Answers from a script"))
        .cancel_poll_interval(Duration::from_millis(20))
}

/// Serves a built server on 127.0.0.1:0.
pub async fn serve(server: A2aServer, stores: &SharedStores) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        server
            .serve(listener, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    TestServer {
        url,
        events: stores.events.clone(),
        tasks: stores.tasks.clone(),
        stop: Some(stop),
        done: Some(done),
    }
}

pub async fn start(runner: impl TurnRunner) -> TestServer {
    let stores = SharedStores::default();
    serve(builder(runner, &stores).build(), &stores).await
}

// ------------------------------------------------------------------ agents

/// An Agent runner whose model answers from `llm`, with extra tools.
pub fn agent_runner(llm: ScriptedLlm, tools: Vec<Arc<dyn ToolProvider>>) -> (AgentRunner, Stores) {
    let stores = looopy_stores_memory::stores();
    let s = stores.clone();
    let runner = AgentRunner::new(move |context_id, owner| {
        let mut b = Agent::builder(context_id)
            .llm(llm.clone())
            .system_prompt("Be brief.")
            .message_store(s.messages.clone())
            .artifact_store(s.artifacts.clone())
            .state_store(s.agents.clone())
            .turn_lock(s.locks.clone())
            .owner(owner);
        for t in &tools {
            b = b.tools(t.clone());
        }
        b.build()
    });
    (runner, stores)
}

/// A server whose Agents answer `answers` in order.
pub async fn agent_server(answers: &[&str]) -> (TestServer, ScriptedLlm) {
    let mut llm = ScriptedLlm::new();
    for a in answers {
        llm = llm.respond(LlmResponse::text(*a));
    }
    let (runner, _stores) = agent_runner(llm.clone(), Vec::new());
    (start(runner).await, llm)
}

/// Token usage of one model call.
pub fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Usage::default()
    }
}

// ------------------------------------------------------------------ scripted runner

/// One step of a scripted turn.
#[derive(Clone)]
pub enum Step {
    /// Emit this payload.
    Emit(EventPayload),
    /// Wait for a permit (a test lets the turn go on).
    Gate(Arc<Semaphore>),
    /// Wait until the turn is cancelled, then end it `canceled`.
    UntilCancelled,
}

pub fn working() -> Step {
    Step::Emit(EventPayload::StatusUpdate {
        status: TaskStatus::new(TaskState::Working),
        is_final: false,
        metadata: looopy_core::StatusMetadata::default(),
    })
}

pub fn chunk(text: &str, first: bool, last: bool) -> Step {
    Step::Emit(EventPayload::ArtifactUpdate {
        artifact: Artifact::new("response", vec![Part::text(text)]).with_name("response"),
        append: !first,
        last_chunk: last,
    })
}

pub fn internal() -> Step {
    Step::Emit(EventPayload::LlmCall {
        iteration: 1,
        message_count: 1,
        tool_count: 0,
    })
}

pub fn finish(state: TaskState, text: &str) -> Step {
    Step::Emit(EventPayload::StatusUpdate {
        status: TaskStatus::new(state).with_message(Message::assistant(text)),
        is_final: true,
        metadata: looopy_core::StatusMetadata::default(),
    })
}

/// A runner playing one script per turn (the last script repeats), and
/// recording the requests it got. It keeps each context's messages (the
/// client's and the final status messages), as a real runner keeps its
/// conversation; it keeps no artifacts.
#[derive(Clone)]
pub struct ScriptedRunner {
    scripts: Arc<Mutex<Vec<Vec<Step>>>>,
    pub requests: Arc<Mutex<Vec<TurnRequest>>>,
    conversations: Arc<Mutex<std::collections::HashMap<String, Vec<Message>>>>,
}

impl ScriptedRunner {
    pub fn new(scripts: Vec<Vec<Step>>) -> Self {
        ScriptedRunner {
            scripts: Arc::new(Mutex::new(scripts)),
            requests: Arc::default(),
            conversations: Arc::default(),
        }
    }

    /// A turn that streams "Hello, world" and completes.
    pub fn hello() -> Self {
        Self::new(vec![hello_script()])
    }

    pub fn requests(&self) -> Vec<TurnRequest> {
        self.requests.lock().unwrap().clone()
    }
}

pub fn hello_script() -> Vec<Step> {
    vec![
        Step::Emit(EventPayload::Task {
            status: TaskStatus::new(TaskState::Submitted),
            metadata: Map::new(),
        }),
        working(),
        internal(),
        chunk("Hello", true, false),
        chunk(", world", false, true),
        finish(TaskState::Completed, "Hello, world"),
    ]
}

#[async_trait]
impl TurnRunner for ScriptedRunner {
    async fn run_turn(&self, request: TurnRequest) -> Result<TurnEvents, RunnerError> {
        self.requests.lock().unwrap().push(request.clone());
        self.conversations
            .lock()
            .unwrap()
            .entry(request.context_id.to_string())
            .or_default()
            .push(request.message.clone());
        let conversations = self.conversations.clone();
        let steps = {
            let mut scripts = self.scripts.lock().unwrap();
            if scripts.len() > 1 {
                scripts.remove(0)
            } else {
                scripts[0].clone()
            }
        };
        // The receiver is the stream of the turn's events.
        let (tx, rx) = futures::channel::mpsc::unbounded();
        tokio::spawn(async move {
            let event = |p: EventPayload| {
                AgentEvent::new(request.task_id.clone(), request.context_id.clone(), p)
            };
            let cancelled = || {
                event(EventPayload::StatusUpdate {
                    status: TaskStatus::new(TaskState::Canceled),
                    is_final: true,
                    metadata: looopy_core::StatusMetadata::default(),
                })
            };
            for step in steps {
                match step {
                    Step::Emit(p) => {
                        if let EventPayload::StatusUpdate {
                            status,
                            is_final: true,
                            ..
                        } = &p
                            && let Some(m) = &status.message
                        {
                            conversations
                                .lock()
                                .unwrap()
                                .entry(request.context_id.to_string())
                                .or_default()
                                .push((**m).clone());
                        }
                        let _ = tx.unbounded_send(event(p));
                    }
                    Step::Gate(gate) => {
                        tokio::select! {
                            permit = gate.acquire() => permit.unwrap().forget(),
                            () = request.cancel.cancelled() => {
                                let _ = tx.unbounded_send(cancelled());
                                return;
                            }
                        }
                    }
                    Step::UntilCancelled => {
                        request.cancel.cancelled().await;
                        let _ = tx.unbounded_send(cancelled());
                        return;
                    }
                }
            }
        });
        Ok(rx.boxed())
    }

    async fn messages(
        &self,
        context_id: &str,
        _owner: &str,
    ) -> Result<Option<Vec<Message>>, RunnerError> {
        let conversations = self.conversations.lock().unwrap();
        Ok(Some(
            conversations.get(context_id).cloned().unwrap_or_default(),
        ))
    }
}

// ------------------------------------------------------------------ raw HTTP

pub fn http() -> reqwest::Client {
    reqwest::Client::new()
}

/// The agent card the server at `url` serves, asked for in `version` (the
/// `A2A-Version` header; none: the server's default).
pub async fn agent_card(url: &str, version: Option<&str>) -> Value {
    get_json(url, "/.well-known/agent-card.json", version).await
}

/// GETs `path` of the server at `url` and parses the JSON answer.
pub async fn get_json(url: &str, path: &str, version: Option<&str>) -> Value {
    let mut req = http().get(format!("{url}{path}"));
    if let Some(v) = version {
        req = req.header("A2A-Version", v);
    }
    req.send().await.unwrap().json().await.unwrap()
}

/// Posts a JSON-RPC request; returns status and body.
pub async fn rpc_raw(
    url: &str,
    version: Option<&str>,
    headers: &[(&str, &str)],
    body: String,
) -> (u16, Value) {
    let mut req = http()
        .post(format!("{url}/"))
        .header("content-type", "application/json")
        .body(body);
    if let Some(v) = version {
        req = req.header("A2A-Version", v);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A JSON-RPC call; returns the whole response object.
pub async fn rpc(url: &str, version: Option<&str>, method: &str, params: Value) -> Value {
    rpc_with(url, version, &[], method, params).await
}

pub async fn rpc_with(
    url: &str,
    version: Option<&str>,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (status, value) = rpc_raw(url, version, headers, body.to_string()).await;
    assert_eq!(status, 200, "{value}");
    value
}

/// One SSE event: its id and the parsed data.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: Option<String>,
    pub data: Value,
}

impl SseEvent {
    /// The id of the task a 1.0 stream's first event (`task`) carries.
    pub fn task_id(&self) -> String {
        self.data["result"]["task"]["id"]
            .as_str()
            .expect("a task event")
            .to_owned()
    }
}

/// An open SSE response, read event by event.
pub struct SseReader {
    response: reqwest::Response,
    buffer: String,
    pub content_type: String,
}

impl SseReader {
    /// Reads an SSE response.
    pub fn new(response: reqwest::Response) -> Self {
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        SseReader {
            response,
            buffer: String::new(),
            content_type,
        }
    }

    /// The next event, `None` when the server closed the stream.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut id = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some(SseEvent {
                    id,
                    data: serde_json::from_str(&data).unwrap(),
                });
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.response.chunk())
                .await
                .expect("the stream stalled")
                .unwrap()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Every remaining event.
    pub async fn rest(mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }
}

/// Sends a streaming JSON-RPC call and returns the response, unread.
pub async fn stream_request(
    url: &str,
    version: Option<&str>,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": method, "params": params});
    let mut req = http()
        .post(format!("{url}/"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body.to_string());
    if let Some(v) = version {
        req = req.header("A2A-Version", v);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

/// `SendStreamingMessage` (A2A 1.0) with no extra headers.
pub async fn stream_v1(url: &str, params: Value) -> SseReader {
    sse(url, Some("1.0"), &[], "SendStreamingMessage", params).await
}

/// `SubscribeToTask` (A2A 1.0) with no extra headers.
pub async fn subscribe_v1(url: &str, task_id: &str) -> SseReader {
    sse(
        url,
        Some("1.0"),
        &[],
        "SubscribeToTask",
        json!({"id": task_id}),
    )
    .await
}

/// `SubscribeToTask` (A2A 1.0) resuming after the event `last_event_id`
/// (its `Last-Event-ID` header).
pub async fn resubscribe_v1(url: &str, task_id: &str, last_event_id: &str) -> SseReader {
    sse(
        url,
        Some("1.0"),
        &[("last-event-id", last_event_id)],
        "SubscribeToTask",
        json!({"id": task_id}),
    )
    .await
}

/// The texts of the artifact updates among A2A 1.0 stream events, in order.
pub fn artifact_texts_v1(events: &[SseEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| e.data["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect()
}

/// The text a client builds of artifact `response` from these A2A 1.0
/// stream events: an update with `append` extends it, one without replaces
/// it (a finished turn's chunks come as one whole artifact).
pub fn built_answer_v1(events: &[SseEvent]) -> String {
    let mut text = String::new();
    for update in events.iter().map(|e| &e.data["result"]["artifactUpdate"]) {
        let Some(part) = update["artifact"]["parts"][0]["text"].as_str() else {
            continue;
        };
        if update["append"] != true {
            text.clear();
        }
        text.push_str(part);
    }
    text
}

/// The state of the last of these A2A 1.0 stream events, a status update
/// (`TASK_STATE_*`; `Null` when it is something else).
pub fn last_state_v1(events: &[SseEvent]) -> &Value {
    &events.last().expect("no events").data["result"]["statusUpdate"]["status"]["state"]
}

/// Opens a streaming JSON-RPC call.
pub async fn sse(
    url: &str,
    version: Option<&str>,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> SseReader {
    let response = stream_request(url, version, headers, method, params).await;
    assert_eq!(response.status().as_u16(), 200);
    SseReader::new(response)
}

pub fn v1_message(text: &str) -> Value {
    json!({"message": {"role": "ROLE_USER", "messageId": uuid(), "parts": [{"text": text}]}})
}

pub fn v03_message(text: &str) -> Value {
    json!({"message": {"kind": "message", "role": "user", "messageId": uuid(), "parts": [{"kind": "text", "text": text}]}})
}

pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Polls until `f` holds (at most 10 s).
pub async fn eventually<F: AsyncFnMut() -> bool>(mut f: F) {
    for _ in 0..500 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("condition not reached in time");
}

// ------------------------------------------------------------------ external tools

#[allow(unused_imports)] // not every test binary needs them
pub use looopy_testkit::external::{repo_root, require};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The Python of the venv with the official a2a-sdk 1.x (`.tools/venv`).
pub fn sdk_1_x_python() -> Option<PathBuf> {
    require(
        "LOOOPY_A2A_PYTHON",
        repo_root().join(".tools/venv/bin/python"),
        "the Python venv with a2a-sdk 1.x",
    )
}

/// The Python of the venv with the official a2a-sdk 0.3.x (`.tools/venv-a2a03`).
pub fn sdk_0_3_python() -> Option<PathBuf> {
    require(
        "LOOOPY_A2A03_PYTHON",
        repo_root().join(".tools/venv-a2a03/bin/python"),
        "the Python venv with a2a-sdk 0.3.x",
    )
}

/// Runs the Python fixture `script` with `args` (at most 120 s); it must
/// succeed and print its findings as JSON on its last line, returned here.
pub async fn run_python(python: &Path, script: &str, args: &[&str]) -> Value {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(python)
            .arg(fixture(script))
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python client hung")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stderr}\n{stdout}");
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// A JSON-RPC call in A2A 1.0 (its version header), answered 200.
pub async fn rpc_v1(url: &str, method: &str, params: Value) -> Value {
    rpc(url, Some("1.0"), method, params).await
}

/// A JSON-RPC call in A2A 0.3 (no version header), answered 200.
pub async fn rpc_v03(url: &str, method: &str, params: Value) -> Value {
    rpc(url, None, method, params).await
}

/// The A2A 1.0 `SendMessage` params of a user message "hi" with `configuration`.
pub fn configured_message(configuration: Value) -> Value {
    let mut params = v1_message("hi");
    params["configuration"] = configuration;
    params
}

/// The task `task_id` as `GetTask` (A2A 1.0) answers it.
pub async fn get_task_v1(url: &str, task_id: &str) -> Value {
    let got = rpc_v1(url, "GetTask", json!({"id": task_id})).await;
    assert!(got["error"].is_null(), "{got}");
    got["result"].clone()
}

/// Waits until `GetTask` (A2A 1.0) tells the task is in `state`
/// (`TASK_STATE_*`).
pub async fn wait_for_state(url: &str, task_id: &str, state: &str) {
    eventually(async || get_task_v1(url, task_id).await["status"]["state"] == state).await;
}

/// Sends "hi" in A2A 1.0 with `configuration`; the id of the task it made.
pub async fn send_v1(url: &str, configuration: Value) -> String {
    let sent = rpc_v1(url, "SendMessage", configured_message(configuration)).await;
    assert!(sent["error"].is_null(), "{sent}");
    sent["result"]["task"]["id"].as_str().unwrap().to_owned()
}
