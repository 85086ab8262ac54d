//! The peer: the official Rust A2A server crate (`a2a-server-lf`, its
//! `DefaultRequestHandler` with its in-memory task store, JSON-RPC router)
//! hosting the same bare loop as the floor, streaming the same events as
//! `a2a` types.

use std::sync::Arc;

use a2a::{
    A2AError, Artifact, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use axum::Router;
use futures::StreamExt;
use futures::channel::mpsc;
use futures::stream::BoxStream;
use serde_json::Value;

use super::workload::{Step, bare_turn, tools_json};

struct BareLoopExecutor {
    client: reqwest::Client,
    url: String,
    tools: Value,
    /// Events per turn, as `looopy serve` sent them.
    events: usize,
}

fn status(task: &str, context: &str, state: TaskState) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.to_owned(),
        context_id: context.to_owned(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: Some(chrono::Utc::now()),
        },
        metadata: None,
    })
}

/// The executor the handler holds; the loop's state is shared with each
/// turn's task.
struct Peer(Arc<BareLoopExecutor>);

impl AgentExecutor for Peer {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let (tx, rx) = mpsc::unbounded();
        let this = self.0.clone();
        tokio::spawn(async move {
            let (task, context) = ctx.task_info();
            let send = |event: StreamResponse| tx.unbounded_send(Ok(event)).is_ok();
            send(StreamResponse::Task(Task {
                id: task.clone(),
                context_id: context.clone(),
                status: TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp: Some(chrono::Utc::now()),
                },
                artifacts: None,
                history: ctx.message.clone().map(|m| vec![m]),
                metadata: None,
            }));
            send(status(&task, &context, TaskState::Working));
            let mut sent = 2;
            let mut emit = |step: Step| {
                if let Step::Text(text) = step {
                    // The first chunk creates the artifact, the others append.
                    let append = sent > 2;
                    sent += 1;
                    send(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                        task_id: task.clone(),
                        context_id: context.clone(),
                        artifact: Artifact {
                            artifact_id: "answer".into(),
                            name: None,
                            description: None,
                            parts: vec![Part::text(text)],
                            metadata: None,
                            extensions: None,
                        },
                        append: Some(append),
                        last_chunk: None,
                        metadata: None,
                    }));
                }
            };
            bare_turn(&this.client, &this.url, &this.tools, &mut emit).await;
            while sent + 1 < this.events {
                sent += 1;
                send(status(&task, &context, TaskState::Working));
            }
            send(status(&task, &context, TaskState::Completed));
        });
        rx.boxed()
    }

    fn cancel(
        &self,
        _ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        futures::stream::empty().boxed()
    }
}

/// The peer's router, calling the mock model at `base`.
pub(crate) fn router(base: &str, events: usize) -> Router {
    let executor = Peer(Arc::new(BareLoopExecutor {
        client: reqwest::Client::new(),
        url: format!("{base}/chat/completions"),
        tools: tools_json(),
        events,
    }));
    let handler = DefaultRequestHandler::new(executor, InMemoryTaskStore::new()).with_capabilities(
        a2a::AgentCapabilities {
            streaming: Some(true),
            ..Default::default()
        },
    );
    a2a_server::jsonrpc::jsonrpc_router(Arc::new(handler))
}
