//! The system under test for the official A2A conformance suite (the TCK,
//! `github.com/a2aproject/a2a-tck`, branches `1.0-dev` and `0.3.x`).
//!
//! A Looopy A2A server (memory stores, no auth, push notifications on)
//! whose turns are played by a
//! scripted [`TurnRunner`]: the TCK keys each behaviour to the prefix of the
//! message id (`scenarios/*.feature` of the TCK), as the official SDKs' SUTs
//! do in their agent executors. Everything else (tasks, the event log,
//! streams, cancel, errors, the card) is the library's own.
//!
//! ```text
//! cargo run -p looopy-a2a --example tck_sut --features grpc -- --port 9999
//! ```
//!
//! `--card 0.3` serves the 0.3 card to card requests without `A2A-Version`
//! (the 0.3 TCK fetches it so); see `docs/a2a.md`, "Conformance", for the
//! exact TCK commands. `TCK_STREAMING_TIMEOUT` (seconds, default 2) sets how
//! long the resubscription task runs (twice that).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use futures::StreamExt;
use looopy_a2a::{
    A2aServer, AgentCardConfig, AgentSkill, ProtocolVersion, PushSettings, RunnerError, TurnEvents,
    TurnRequest, TurnRunner,
};
use looopy_core::{
    AgentEvent, Artifact, AuthContext, EventPayload, FileContent, Message, Part, TaskState,
    TaskStatus,
};
use looopy_stores_memory::{MemoryEventLog, MemoryPushConfigStore, MemoryTaskRecordStore};
use serde_json::json;

/// One step of a scenario.
#[derive(Debug, Clone)]
enum Step {
    /// A status update that does not end the turn.
    Status(TaskState),
    /// An artifact chunk: parts, `append`, `last_chunk`.
    Artifact(Vec<Part>, bool, bool),
    /// Waits (a cancel ends the turn `canceled` meanwhile).
    Sleep(Duration),
    /// The final status, with an agent message when the text is not empty.
    End(TaskState, String),
}

/// What a message does, by its id.
#[derive(Debug, Clone)]
enum Scenario {
    /// Answer with a message, no task.
    Reply(String),
    /// Run a turn.
    Turn(Vec<Step>),
}

fn text(t: &str) -> Vec<Part> {
    vec![Part::text(t)]
}

fn file_bytes() -> Vec<Part> {
    vec![Part::file(FileContent {
        blob: None,
        name: Some("output.txt".into()),
        mime_type: Some("text/plain".into()),
        uri: None,
        bytes: Some(base64::engine::general_purpose::STANDARD.encode(b"tck")),
    })]
}

fn file_url() -> Vec<Part> {
    vec![Part::file(FileContent {
        blob: None,
        name: Some("output.txt".into()),
        mime_type: Some("text/plain".into()),
        uri: Some("https://example.com/output.txt".into()),
        bytes: None,
    })]
}

/// Working, one artifact, completed: the streaming scenarios' shape.
fn streamed(parts: Vec<Part>) -> Vec<Step> {
    vec![
        Step::Status(TaskState::Working),
        Step::Artifact(parts, false, true),
        Step::End(TaskState::Completed, String::new()),
    ]
}

/// The scenario of a message id. Longer prefixes come first where one
/// prefix starts another (`tck-artifact-file-url`, `tck-artifact-file`).
fn scenario(message_id: &str, streaming_timeout: Duration) -> Scenario {
    use Step::*;
    let done = |t: &str| End(TaskState::Completed, t.to_owned());
    let table: Vec<(&str, Vec<Step>)> = vec![
        ("tck-complete-task", vec![done("Hello from TCK")]),
        (
            "tck-artifact-text",
            vec![
                Artifact(text("Generated text content"), false, true),
                done(""),
            ],
        ),
        (
            "tck-artifact-file-url",
            vec![Artifact(file_url(), false, true), done("")],
        ),
        (
            "tck-artifact-file",
            vec![Artifact(file_bytes(), false, true), done("")],
        ),
        (
            "tck-artifact-data",
            vec![
                Artifact(
                    vec![Part::data(json!({"key": "value", "count": 42}))],
                    false,
                    true,
                ),
                done(""),
            ],
        ),
        (
            "tck-input-required",
            vec![End(TaskState::InputRequired, String::new())],
        ),
        (
            "tck-reject-task",
            vec![End(TaskState::Rejected, "rejected".into())],
        ),
        ("tck-stream-001", streamed(text("Stream hello from TCK"))),
        ("tck-stream-002", vec![done("")]),
        ("tck-stream-003", streamed(text("Stream task lifecycle"))),
        ("tck-stream-ordering-001", streamed(text("Ordered output"))),
        (
            "tck-stream-artifact-text",
            streamed(text("Streamed text content")),
        ),
        ("tck-stream-artifact-file", streamed(file_bytes())),
        (
            "tck-stream-artifact-chunked",
            vec![
                Status(TaskState::Working),
                Artifact(text("chunk-1 "), false, false),
                Artifact(text("chunk-2"), true, true),
                done(""),
            ],
        ),
        (
            "test-resubscribe-message-id",
            vec![
                Status(TaskState::Working),
                Sleep(streaming_timeout * 2),
                done(""),
            ],
        ),
    ];
    if message_id.starts_with("tck-message-response") {
        return Scenario::Reply("Direct message response".into());
    }
    if let Some((_, steps)) = table.into_iter().find(|(p, _)| message_id.starts_with(p)) {
        return Scenario::Turn(steps);
    }
    if message_id.starts_with("tck-") {
        // The 1.0 suite's default: complete at once.
        return Scenario::Turn(vec![done(&format!(
            "Unhandled messageId prefix: {message_id}"
        ))]);
    }
    // The 0.3 suite's messages: its tests cancel, continue (several times)
    // and read the task a `message/send` returned, so every turn ends
    // waiting for input (after a `working` update).
    Scenario::Turn(vec![
        Status(TaskState::Working),
        End(TaskState::InputRequired, "What else should I do?".into()),
    ])
}

/// Plays the scenarios and keeps each conversation (the client's messages
/// and the agent's), which tasks show as their history.
#[derive(Clone, Default)]
struct TckRunner {
    conversations: Arc<Mutex<HashMap<String, Vec<Message>>>>,
    streaming_timeout: Duration,
}

impl TckRunner {
    fn remember(&self, context_id: &str, message: Message) {
        self.conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(context_id.to_owned())
            .or_default()
            .push(message);
    }
}

#[async_trait]
impl TurnRunner for TckRunner {
    async fn reply(
        &self,
        _context_id: &str,
        message: &Message,
        _auth: &AuthContext,
    ) -> Result<Option<Message>, RunnerError> {
        Ok(
            match scenario(&message.message_id, self.streaming_timeout) {
                Scenario::Reply(t) => Some(Message::assistant(t)),
                Scenario::Turn(_) => None,
            },
        )
    }

    async fn run_turn(&self, request: TurnRequest) -> Result<TurnEvents, RunnerError> {
        self.remember(&request.context_id, request.message.clone());
        let Scenario::Turn(steps) = scenario(&request.message.message_id, self.streaming_timeout)
        else {
            return Err(RunnerError::new("a direct reply runs no turn"));
        };
        // The receiver is the stream of the turn's events.
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let this = self.clone();
        tokio::spawn(async move {
            let event = |p| AgentEvent::new(request.task_id.clone(), request.context_id.clone(), p);
            let end = |status: TaskStatus| {
                event(EventPayload::StatusUpdate {
                    status,
                    is_final: true,
                    metadata: looopy_core::StatusMetadata::default(),
                })
            };
            for (n, step) in steps.into_iter().enumerate() {
                let payload = match step {
                    Step::Status(state) => EventPayload::StatusUpdate {
                        status: TaskStatus::new(state),
                        is_final: false,
                        metadata: looopy_core::StatusMetadata::default(),
                    },
                    Step::Artifact(parts, append, last_chunk) => EventPayload::ArtifactUpdate {
                        artifact: Artifact::new(format!("{}-artifact", request.task_id), parts)
                            .with_name(format!("artifact-{n}")),
                        append,
                        last_chunk,
                    },
                    Step::Sleep(d) => {
                        tokio::select! {
                            () = tokio::time::sleep(d) => continue,
                            () = request.cancel.cancelled() => {
                                let _ = tx.unbounded_send(end(TaskStatus::new(TaskState::Canceled)));
                                return;
                            }
                        }
                    }
                    Step::End(state, t) => {
                        let mut status = TaskStatus::new(state);
                        if !t.is_empty() {
                            let answer = Message::assistant(t);
                            this.remember(&request.context_id, answer.clone());
                            status = status.with_message(answer);
                        }
                        let _ = tx.unbounded_send(end(status));
                        return;
                    }
                };
                let _ = tx.unbounded_send(event(payload));
            }
        });
        Ok(rx.boxed())
    }

    async fn messages(
        &self,
        context_id: &str,
        _owner: &str,
    ) -> Result<Option<Vec<Message>>, RunnerError> {
        let conversations = self
            .conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(Some(
            conversations.get(context_id).cloned().unwrap_or_default(),
        ))
    }
}

struct Args {
    port: u16,
    card: ProtocolVersion,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        port: 9999,
        card: ProtocolVersion::V1_0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--port" => out.port = value.parse().map_err(|e| format!("--port: {e}"))?,
            "--card" => out.card = value.parse().map_err(|v| format!("--card: unknown {v}"))?,
            _ => return Err(format!("unknown argument {a} (--port N, --card 1.0|0.3)")),
        }
    }
    Ok(out)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let streaming_timeout = std::env::var("TCK_STREAMING_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(Duration::from_secs(2), Duration::from_secs_f64);
    let runner = TckRunner {
        streaming_timeout,
        ..TckRunner::default()
    };
    let card = AgentCardConfig::new(
        "Looopy TCK agent",
        "Plays the A2A TCK's scenarios on a Looopy A2A server",
    )
    .version("1.0.0")
    .skill(
        AgentSkill::new(
            "tck",
            "TCK conformance",
            "Handles TCK conformance test messages",
        )
        .tag("tck"),
    );
    let server = A2aServer::builder(
        runner,
        Arc::new(MemoryEventLog::new()),
        Arc::new(MemoryTaskRecordStore::new()),
    )
    .card(card)
    .card_default_version(args.card)
    // The TCK's webhook receiver listens on localhost.
    .push_notifications(
        Arc::new(MemoryPushConfigStore::new()),
        PushSettings::default().allow_private_webhooks(true),
    )
    .build();
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", args.port)).await?;
    eprintln!(
        "TCK system under test on http://localhost:{} (card without A2A-Version: {})",
        args.port, args.card
    );
    server
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
