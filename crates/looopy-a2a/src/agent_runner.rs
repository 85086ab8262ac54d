//! [`AgentRunner`]: serves `looopy-agent` [`Agent`]s, one per context.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_agent::{Agent, AgentError, LifecycleState, TurnOptions};
use looopy_core::approval::input_required_part;
use looopy_core::client_tool::ClientTools;
use looopy_core::elicitation::ElicitationRequest;
use looopy_core::{
    AgentEvent, Artifact, EventPayload, Message, Part, Role, StatusMetadata, TaskState, TaskStatus,
    TurnEnd, TurnError, TurnReport,
};
use looopy_loop::TurnSettings;

use crate::runner::{ResumeRequest, RunnerError, TurnEvents, TurnRequest, TurnRunner};

/// Makes the Agent of a context: `(context_id, owner principal)`.
pub type AgentFactory = dyn Fn(&str, &str) -> Result<Agent, AgentError> + Send + Sync;

/// Runs each turn on the [`Agent`] of its context, made by a factory on first
/// use and kept for the next turns (at most `max_cached` idle agents are
/// kept; the rest are made again from the stores when needed).
///
/// A message for a context whose agent is busy (a turn running here, or the
/// context's turn lease held by another process) waits for it, until the
/// task is cancelled. The turn keeps running when its stream is dropped.
///
/// ```no_run
/// use looopy_a2a::AgentRunner;
/// use looopy_agent::Agent;
/// use looopy_testkit::ScriptedLlm;
///
/// let stores = looopy_stores_memory::stores();
/// let runner = AgentRunner::new(move |context_id, owner| {
///     Agent::builder(context_id)
///         .llm(ScriptedLlm::new())
///         .message_store(stores.messages.clone())
///         .artifact_store(stores.artifacts.clone())
///         .state_store(stores.agents.clone())
///         .turn_lock(stores.locks.clone())
///         .owner(owner)
///         .build()
/// });
/// ```
pub struct AgentRunner {
    factory: Box<AgentFactory>,
    agents: Mutex<HashMap<String, Agent>>,
    max_cached: usize,
}

impl AgentRunner {
    /// A runner making agents with `factory`.
    pub fn new(
        factory: impl Fn(&str, &str) -> Result<Agent, AgentError> + Send + Sync + 'static,
    ) -> Self {
        AgentRunner {
            factory: Box::new(factory),
            agents: Mutex::default(),
            max_cached: 1024,
        }
    }

    /// Keeps at most this many agents between turns (default 1024).
    pub fn max_cached(mut self, n: usize) -> Self {
        self.max_cached = n.max(1);
        self
    }

    fn agent(&self, context_id: &str, owner: &str) -> Result<Agent, AgentError> {
        let mut agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(agent) = agents.get(context_id) {
            return Ok(agent.clone());
        }
        if agents.len() >= self.max_cached {
            agents.retain(|_, a| a.lifecycle() == LifecycleState::Busy);
        }
        let agent = (self.factory)(context_id, owner)?;
        agents.insert(context_id.to_owned(), agent.clone());
        Ok(agent)
    }
}

/// The one event of a turn cancelled before it started.
fn cancelled(request: &TurnRequest) -> TurnEvents {
    let event = AgentEvent::new(
        request.task_id.clone(),
        request.context_id.clone(),
        EventPayload::StatusUpdate {
            status: TaskStatus::new(TaskState::Canceled),
            is_final: true,
            metadata: Default::default(),
        },
    );
    futures::stream::iter([event]).boxed()
}

/// An answer that could not be read: approval decisions or answers to a
/// tool's question that are malformed, or meant for a call that is not
/// waiting. Nothing ran and nothing was saved, so the task asks again: it
/// ends `input-required` with the error, the approvals still waiting (the
/// conversation's record of them) and the questions the last turn asked
/// (its status message), each question with the error, in the shape of
/// the turn that asked.
async fn reask(
    agent: &Agent,
    request: &TurnRequest,
    error: &AgentError,
) -> Result<TurnEvents, RunnerError> {
    let waiting = agent
        .pending_approvals()
        .await
        .map_err(|e| RunnerError::new(e.to_string()))?;
    let elicitations: Vec<ElicitationRequest> = request
        .asked
        .as_deref()
        .map(ElicitationRequest::in_message)
        .unwrap_or_default()
        .into_iter()
        .map(|q| q.with_error(error.to_string()))
        .collect();
    let questions: Vec<&str> = waiting
        .iter()
        .map(|r| r.question.as_str())
        .chain(elicitations.iter().map(|q| q.message.as_str()))
        .collect();
    let text = format!("{error}. {}", questions.join("\n"));
    let message = Message::with_parts(
        Role::Assistant,
        vec![
            Part::text(text.trim_end()),
            input_required_part(&[], &waiting, &elicitations),
        ],
    );
    let code = match error {
        AgentError::InvalidElicitation(_) | AgentError::NotAwaitingAnswer { .. } => {
            "invalid_elicitation"
        }
        _ => "invalid_approval",
    };
    let mut report =
        TurnReport::new(TurnEnd::InputRequired).with_error(TurnError::new(code, error.to_string()));
    report.approval_requests = waiting;
    let metadata = StatusMetadata::report(report);
    let event = AgentEvent::new(
        request.task_id.clone(),
        request.context_id.clone(),
        EventPayload::StatusUpdate {
            status: TaskStatus::new(TaskState::InputRequired).with_message(message),
            is_final: true,
            metadata,
        },
    );
    Ok(futures::stream::iter([event]).boxed())
}

#[async_trait]
impl TurnRunner for AgentRunner {
    async fn run_turn(&self, request: TurnRequest) -> Result<TurnEvents, RunnerError> {
        let agent = self
            .agent(&request.context_id, &request.auth.principal)
            .map_err(|e| RunnerError::new(format!("could not make the agent: {e}")))?;
        let client_tools = request.client_tools()?;
        let mut wait = Duration::from_millis(20);
        loop {
            let mut options = TurnOptions::new()
                .with_auth(request.auth.clone())
                .with_task_id(request.task_id.to_string())
                .with_cancel(request.cancel.clone())
                .with_metadata(request.metadata.clone())
                .with_settings(TurnSettings::new().with_internal_events(request.internal_events()))
                .keep_running_on_drop(true);
            if let Some(tools) = &client_tools {
                options = options.with_tools(tools.clone());
            }
            match agent
                .execute_turn_with(Some(request.message.clone()), options)
                .await
            {
                Ok(turn) => return Ok(turn.boxed()),
                Err(e) if e.is_busy() => {
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = request.cancel.cancelled() => return Ok(cancelled(&request)),
                    }
                    wait = (wait * 2).min(Duration::from_secs(1));
                }
                Err(
                    e @ (AgentError::InvalidApproval(_)
                    | AgentError::NotAwaitingApproval { .. }
                    | AgentError::InvalidElicitation(_)
                    | AgentError::NotAwaitingAnswer { .. }),
                ) => return reask(&agent, &request, &e).await,
                Err(e) => return Err(RunnerError::new(e.to_string())),
            }
        }
    }

    async fn resume_turn(&self, request: ResumeRequest) -> Result<Option<TurnEvents>, RunnerError> {
        let agent = self
            .agent(&request.context_id, &request.auth.principal)
            .map_err(|e| RunnerError::new(format!("could not make the agent: {e}")))?;
        let mut options = TurnOptions::new()
            .with_auth(request.auth.clone())
            .with_cancel(request.cancel.clone())
            .keep_running_on_drop(true);
        // The client tools the turn's message declared are offered again:
        // that message is the last one stored (a turn saves the rest at its end).
        let last = agent
            .last_messages(1)
            .await
            .map_err(|e| RunnerError::new(e.to_string()))?;
        if let Some(message) = last.first().filter(|m| m.role == Role::User) {
            let tools = ClientTools::from_message(message)
                .map_err(|e| RunnerError::new(format!("invalid clientTools: {e}")))?;
            if !tools.is_empty() {
                options = options.with_tools(Arc::new(tools));
            }
        }
        match agent.resume_turn(&request.task_id, options).await {
            Ok(turn) => Ok(Some(turn.boxed())),
            Err(e) if e.is_busy() => Ok(None),
            Err(e) => Err(RunnerError::new(e.to_string())),
        }
    }

    /// The Agent's conversation ([`Agent::messages`]: its message store,
    /// then what a turn running here has not saved yet).
    async fn messages(
        &self,
        context_id: &str,
        owner: &str,
    ) -> Result<Option<Vec<Message>>, RunnerError> {
        let agent = self
            .agent(context_id, owner)
            .map_err(|e| RunnerError::new(format!("could not make the agent: {e}")))?;
        let messages = agent
            .messages()
            .await
            .map_err(|e| RunnerError::new(e.to_string()))?;
        Ok(Some(messages))
    }

    /// The artifacts of the Agent's artifact store that `task_id` made.
    async fn artifacts(
        &self,
        context_id: &str,
        task_id: &str,
        owner: &str,
    ) -> Result<Option<Vec<Artifact>>, RunnerError> {
        let agent = self
            .agent(context_id, owner)
            .map_err(|e| RunnerError::new(format!("could not make the agent: {e}")))?;
        let stored = agent
            .artifacts()
            .await
            .map_err(|e| RunnerError::new(e.to_string()))?;
        Ok(Some(
            stored
                .into_iter()
                .filter(|a| a.task_id == task_id)
                .map(|a| a.artifact)
                .collect(),
        ))
    }

    /// Shuts every cached Agent down ([`Agent::shutdown`]: its state is
    /// saved and its tool providers stop, so MCP servers' child processes
    /// end), and forgets them.
    async fn shutdown(&self) {
        let agents: Vec<Agent> = {
            let mut agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
            agents.drain().map(|(_, agent)| agent).collect()
        };
        for agent in agents {
            if let Err(error) = agent.shutdown().await {
                tracing::warn!(context_id = %agent.context_id(), %error, "an agent did not shut down cleanly");
            }
        }
    }
}
