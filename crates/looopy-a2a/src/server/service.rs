//! The A2A operations, once for every binding: one async method per
//! operation, with typed parameters (already read from the request's wire
//! form) and typed results (written in the request's wire form by the
//! binding). JSON-RPC, HTTP+JSON and gRPC differ only in how they read a
//! request and write its answer.

use std::sync::Arc;

use looopy_core::store::PushConfig;
use looopy_core::{AuthContext, Part, Role};
use serde_json::Value;

use crate::RpcError;
use crate::model::{
    ListQuery, SendParams, SendResponse, StreamEvent, TaskQuery, TaskSnapshot, WireMessage,
};
use crate::server::push::{self, ConfigInput, ConfigQuery};
use crate::server::sse::{Opened, StreamSpec};
use crate::server::state::ServerState;
use crate::trace;
use crate::version::ProtocolVersion;
use crate::wire;

/// Who calls, in which version, with which extensions: what every
/// operation is given beside its parameters.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// The authenticated caller.
    pub(crate) auth: AuthContext,
    /// The protocol version of the request (results are written in it).
    pub(crate) version: ProtocolVersion,
    /// Whether the request activated the tool-progress extension and the
    /// server offers it (streams then carry its updates).
    pub(crate) progress: bool,
}

/// One page of `ListTasks`.
#[derive(Debug)]
pub(crate) struct TaskPage {
    /// The page's tasks.
    pub(crate) tasks: Vec<TaskSnapshot>,
    /// The offset of the next page, when there is one.
    pub(crate) next: Option<usize>,
    /// The page size asked for.
    pub(crate) page_size: usize,
    /// How many tasks match in all.
    pub(crate) total: usize,
}

/// The operations on a server's tasks.
#[derive(Clone, Copy)]
pub(crate) struct Service<'a> {
    state: &'a Arc<ServerState>,
}

impl ServerState {
    /// The operations on this server's tasks.
    pub(crate) fn service(self: &Arc<Self>) -> Service<'_> {
        Service { state: self }
    }
}

impl<'a> Service<'a> {
    /// `SendMessage`: a direct reply, or the task the message started or
    /// continued (after its turn, when the request blocks).
    pub(crate) async fn send_message(
        self,
        call: &Call,
        mut params: SendParams,
    ) -> Result<SendResponse, RpcError> {
        let state = self.state;
        check_message(state, &params)?;
        if let Some(reply) = direct_reply(state, &call.auth, &params).await? {
            return Ok(SendResponse::Message(reply));
        }
        let (blocking, history_length) = (params.blocking, params.history_length);
        let inline = push::inline(state, call.version, params.push.take()).await?;
        // No stream of this request carries tool-progress updates: none are built.
        let started = state.tasks.start(&call.auth, params, false).await?;
        push::started(state, &started, inline).await?;
        trace::record_task(&started.task_id, None);
        // A blocking request answers once the turn ended, unless the
        // server shuts down first (it answers with the task as it is then).
        let waited = blocking
            && tokio::select! {
                () = state.tasks.wait_local(&started.task_id) => true,
                () = state.shutdown.cancelled() => false,
            };
        let record = match state
            .tasks
            .owned(&started.task_id, &call.auth.principal)
            .await
        {
            Ok(record) => record,
            Err(e) if waited && e.code == a2a::error_code::INTERNAL_ERROR => {
                let why = format!("its record could not be read ({})", e.message);
                return Err(store_unreachable(&started.task_id, &why));
            }
            Err(e) => return Err(e),
        };
        trace::record_task(&started.task_id, Some(record.status.state));
        if waited && !record.status.state.ends_turn() {
            // The turn ended but the task store has not taken its end (it
            // fails, or does not answer): the record still shows a state
            // the turn has left, which is not an answer to a blocking call.
            let why = format!(
                "its end is not saved yet (the task still shows {})",
                record.status.state.as_str()
            );
            return Err(store_unreachable(&started.task_id, &why));
        }
        let snapshot = state.tasks.snapshot(&record, history_length).await?;
        Ok(SendResponse::Task(snapshot))
    }

    /// `SendStreamingMessage`: a direct reply as a one-item stream, or the
    /// stream of the turn the message started.
    pub(crate) async fn send_streaming_message(
        self,
        call: &Call,
        mut params: SendParams,
    ) -> Result<Opened, RpcError> {
        let state = self.state;
        let v = call.version;
        check_message(state, &params)?;
        if let Some(reply) = direct_reply(state, &call.auth, &params).await? {
            let item = wire::stream_result(v, &StreamEvent::Message(reply))
                .ok_or_else(|| RpcError::internal("a message reply has no stream form"))?;
            return Ok(Opened::Single(item));
        }
        let inline = push::inline(state, v, params.push.take()).await?;
        let started = state.tasks.start(&call.auth, params, call.progress).await?;
        push::started(state, &started, inline).await?;
        trace::record_task(&started.task_id, None);
        Ok(Opened::Follow(Box::new(StreamSpec {
            version: v,
            task_id: started.task_id,
            after: started.after,
            first: None,
            progress: call.progress,
            next_turn: false,
            reader: Some(started.reader),
        })))
    }

    /// `GetTask`.
    pub(crate) async fn get_task(
        self,
        call: &Call,
        q: TaskQuery,
    ) -> Result<TaskSnapshot, RpcError> {
        let tasks = &self.state.tasks;
        trace::record_task(&q.id, None);
        let record = tasks.owned(&q.id, &call.auth.principal).await?;
        trace::record_task(&q.id, Some(record.status.state));
        tasks.snapshot(&record, q.history_length).await
    }

    /// `ListTasks` (1.0 only).
    pub(crate) async fn list_tasks(self, call: &Call, q: ListQuery) -> Result<TaskPage, RpcError> {
        let (tasks, next, total) = self.state.tasks.list(&call.auth, &q).await?;
        Ok(TaskPage {
            tasks,
            next,
            page_size: q.page_size,
            total,
        })
    }

    /// `CancelTask`: the task once its turn recorded the end.
    pub(crate) async fn cancel_task(
        self,
        call: &Call,
        q: TaskQuery,
    ) -> Result<TaskSnapshot, RpcError> {
        trace::record_task(&q.id, None);
        let snapshot = self.state.tasks.cancel(&call.auth, &q.id).await?;
        trace::record_task(&q.id, Some(snapshot.status.state));
        Ok(snapshot)
    }

    /// `SubscribeToTask` (0.3 `tasks/resubscribe`): the task's events from
    /// the log, after `last_event_id` when the client names one.
    pub(crate) async fn subscribe_to_task(
        self,
        call: &Call,
        q: TaskQuery,
        last_event_id: Option<String>,
    ) -> Result<Opened, RpcError> {
        let tasks = &self.state.tasks;
        trace::record_task(&q.id, None);
        let record = tasks.owned(&q.id, &call.auth.principal).await?;
        trace::record_task(&q.id, Some(record.status.state));
        // Replaying what a client missed works on a finished task too; a
        // plain subscription to a finished task is refused (spec §3.1.6).
        if last_event_id.is_none() && record.status.state.is_terminal() {
            return Err(RpcError::unsupported(format!(
                "the task is {}: there is nothing to subscribe to",
                record.status.state.as_str()
            )));
        }
        // A task waiting for input ended its last turn: the stream shows
        // what happens next (its next turn, to the end).
        let next_turn = last_event_id.is_none() && record.status.state.ends_turn();
        let after = match last_event_id {
            Some(id) => Some(id),
            None if next_turn => record.last_event_id.clone(),
            None => record.turn_start_event_id.clone(),
        };
        // 1.0 streams start with the task as it is now.
        let first = match call.version {
            ProtocolVersion::V1_0 => Some(tasks.snapshot(&record, None).await?),
            ProtocolVersion::V0_3 => None,
        };
        // A stream that follows a turn running here reads its chunks as
        // they came.
        let reader = tasks.reader(&q.id);
        Ok(Opened::Follow(Box::new(StreamSpec {
            version: call.version,
            task_id: q.id,
            after,
            first,
            progress: call.progress,
            next_turn,
            reader,
        })))
    }

    /// The push config operations, when this server sends push
    /// notifications (-32003 otherwise, before any params are read).
    pub(crate) fn push_configs(self) -> Result<PushConfigs<'a>, RpcError> {
        match self.state.push {
            Some(_) => Ok(PushConfigs { state: self.state }),
            None => Err(RpcError::push_not_supported()),
        }
    }

    /// `GetExtendedAgentCard`: this agent has none.
    pub(crate) fn extended_agent_card(self, _call: &Call) -> Result<Value, RpcError> {
        Err(RpcError::unsupported(
            "this agent has no extended agent card (capabilities.extendedAgentCard is false)",
        ))
    }
}

/// The push config operations of a server that sends push notifications
/// ([`Service::push_configs`]).
#[derive(Clone, Copy)]
pub(crate) struct PushConfigs<'a> {
    state: &'a ServerState,
}

impl PushConfigs<'_> {
    /// `CreateTaskPushNotificationConfig` (0.3 `.../set`).
    pub(crate) async fn create(
        self,
        call: &Call,
        task_id: String,
        input: ConfigInput,
    ) -> Result<PushConfig, RpcError> {
        push::create(self.state, &call.auth, call.version, task_id, input).await
    }

    /// `GetTaskPushNotificationConfig` (0.3 `.../get`).
    pub(crate) async fn get(self, call: &Call, q: &ConfigQuery) -> Result<PushConfig, RpcError> {
        push::get(self.state, &call.auth, call.version, q).await
    }

    /// `ListTaskPushNotificationConfigs` (0.3 `.../list`): every config of
    /// the task (the binding pages them).
    pub(crate) async fn list(
        self,
        call: &Call,
        q: &ConfigQuery,
    ) -> Result<Vec<PushConfig>, RpcError> {
        push::list(self.state, &call.auth, q).await
    }

    /// `DeleteTaskPushNotificationConfig` (0.3 `.../delete`); deleting a
    /// config that is not there succeeds.
    pub(crate) async fn delete(self, call: &Call, q: ConfigQuery) -> Result<(), RpcError> {
        push::delete(self.state, &call.auth, call.version, q).await
    }
}

/// The answer to a blocking `SendMessage` whose turn ended while the task
/// store could not be reached (`why`: what could not be done): -32603,
/// naming the task (`taskId` in the error's metadata), whose end the
/// server goes on trying to save.
fn store_unreachable(task_id: &str, why: &str) -> RpcError {
    RpcError::internal(format!(
        "the task store was unreachable: the turn of task {task_id} ended, but {why}; \
         the server keeps trying to save the end, and GetTask shows it once the store answers"
    ))
    .with_meta("taskId", task_id)
}

/// Refuses messages the agent cannot take: no parts, or parts of media types
/// the card does not accept (-32005).
fn check_message(state: &ServerState, params: &SendParams) -> Result<(), RpcError> {
    let parts = &params.message.message.parts;
    if parts.is_empty() {
        return Err(
            RpcError::invalid_params("message.parts: at least one part is required")
                .with_meta("field", "message.parts"),
        );
    }
    for part in parts {
        let media_type = match part {
            Part::Text { .. } => continue,
            Part::Data { .. } => "application/json",
            Part::File { file } => file
                .mime_type
                .as_deref()
                .unwrap_or("application/octet-stream"),
            // A part kind newer than this code: checked as opaque bytes.
            _ => "application/octet-stream",
        };
        if !state.card.accepts(media_type) {
            return Err(RpcError::content_type_not_supported(media_type));
        }
    }
    Ok(())
}

/// The runner's direct reply to a message that names no task, when it
/// gives one: the message to answer with instead of a task.
async fn direct_reply(
    state: &ServerState,
    auth: &AuthContext,
    params: &SendParams,
) -> Result<Option<WireMessage>, RpcError> {
    if params.message.task_id.is_some() {
        return Ok(None);
    }
    let context_id = params
        .message
        .context_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let reply = state
        .runner
        .reply(&context_id, &params.message.message, auth)
        .await
        .map_err(|e| RpcError::internal(format!("turn runner: {e}")))?;
    Ok(reply.map(|mut message| {
        message.role = Role::Assistant;
        if message.message_id.is_empty() {
            message.message_id = uuid::Uuid::now_v7().to_string();
        }
        WireMessage {
            message,
            task_id: None,
            context_id: Some(context_id),
            reference_task_ids: Vec::new(),
        }
    }))
}
