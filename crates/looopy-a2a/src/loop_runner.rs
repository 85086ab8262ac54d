//! [`LoopRunner`]: a [`TurnRunner`] made of an [`AgentLoop`] and a
//! [`MessageStore`], for servers that do not need the full Agent lifecycle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream;
use looopy_core::store::MessageStore;
use looopy_core::{AgentEvent, History, Message, TurnContext};
use looopy_loop::{AgentLoop, TurnHandle, TurnSettings, TurnStream};
use tokio::sync::OwnedMutexGuard;

use crate::runner::{RunnerError, TurnEvents, TurnRequest, TurnRunner};

/// Runs each turn with an [`AgentLoop`] over the context's history from a
/// [`MessageStore`], and appends the user's message and the turn's new
/// messages to the store when the turn ends (before its final event is
/// passed on, so that the next turn sees them).
///
/// Turns of one context run one at a time within this process (a second
/// message waits for the first turn to end). Use the `looopy-agent` Agent
/// instead when you need cross-process turn locks, compaction or lifecycle
/// state.
#[derive(Clone)]
pub struct LoopRunner {
    agent_loop: AgentLoop,
    messages: Arc<dyn MessageStore>,
    contexts: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl LoopRunner {
    /// A runner over this loop and history store.
    pub fn new(agent_loop: AgentLoop, messages: Arc<dyn MessageStore>) -> Self {
        LoopRunner {
            agent_loop,
            messages,
            contexts: Arc::default(),
        }
    }

    fn context_lock(&self, context_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut contexts = self.contexts.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget locks nobody holds or waits for.
        contexts.retain(|_, l| Arc::strong_count(l) > 1);
        contexts.entry(context_id.to_owned()).or_default().clone()
    }
}

struct Running {
    events: TurnStream,
    handle: TurnHandle,
    messages: Arc<dyn MessageStore>,
    context_id: String,
    user_message: Message,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Running {
    async fn persist(&mut self) {
        let mut batch = vec![self.user_message.clone()];
        if let Some(outcome) = self.handle.outcome() {
            batch.extend(outcome.new_messages());
        }
        if let Err(e) = self.messages.append(&self.context_id, &batch).await {
            tracing::warn!(context_id = %self.context_id, error = %e, "could not save the turn's messages");
        }
        self.guard = None;
    }

    async fn next(mut self) -> Option<(AgentEvent, Self)> {
        let event = self.events.next().await?;
        if event.is_final() && self.guard.is_some() {
            self.persist().await;
        }
        Some((event, self))
    }
}

#[async_trait]
impl TurnRunner for LoopRunner {
    /// Shuts the loop's tool providers down (MCP servers' child processes
    /// end).
    async fn shutdown(&self) {
        if let Err(error) = self.agent_loop.shutdown_tools().await {
            tracing::warn!(%error, "a tool provider did not shut down cleanly");
        }
    }

    async fn run_turn(&self, request: TurnRequest) -> Result<TurnEvents, RunnerError> {
        let guard = self.context_lock(&request.context_id).lock_owned().await;
        let mut history = self
            .messages
            .load(&request.context_id)
            .await
            .map_err(|e| RunnerError::new(format!("could not load the conversation: {e}")))?;
        history.push(request.message.clone());
        let settings = TurnSettings::new().with_internal_events(request.internal_events());
        let cx = TurnContext::new(request.task_id.clone(), request.context_id.clone())
            .with_auth(request.auth)
            .with_cancel(request.cancel)
            .with_metadata(request.metadata);
        let events = self
            .agent_loop
            .start_turn_with(History::from(history), cx, settings);
        let running = Running {
            handle: events.handle(),
            events,
            messages: self.messages.clone(),
            context_id: request.context_id.to_string(),
            user_message: request.message,
            guard: Some(guard),
        };
        Ok(stream::unfold(running, Running::next).boxed())
    }

    /// The context's messages in the store (a turn's are saved when it ends).
    async fn messages(
        &self,
        context_id: &str,
        _owner: &str,
    ) -> Result<Option<Vec<Message>>, RunnerError> {
        let messages = self
            .messages
            .load(context_id)
            .await
            .map_err(|e| RunnerError::new(format!("could not load the conversation: {e}")))?;
        Ok(Some(messages))
    }
}
