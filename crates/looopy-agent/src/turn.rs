//! Running a turn: [`Agent::execute_turn`], [`TurnOptions`], and the
//! [`AgentTurn`] stream it returns.
//!
//! One rule says which task runs a turn: **the task that reads its
//! [`AgentTurn`]**. The turn's driver (see `driver`) is polled by
//! [`AgentTurn::poll_next`]: it drains the loop's events, saves artifacts
//! as they stream, hands the events to the [`AgentTurn`], and when the
//! loop is done saves the messages the turn produced (also when it failed
//! or was cancelled), updates the state, releases the lease and only then
//! hands over the final event. Nothing is spawned while the turn is read,
//! and no event crosses a task. So:
//!
//! - when the caller sees the final event, everything is saved and the
//!   agent takes the next turn;
//! - the turn advances only while its [`AgentTurn`] is read (a reader that
//!   stops reading also stops the lease's renewals);
//! - dropping the [`AgentTurn`] before the end moves the rest of the turn
//!   to a task of its own, which saves what the turn produced: nothing is
//!   lost to a dropped stream. The turn is cancelled first unless
//!   [`TurnOptions::keep_running_on_drop`] was set.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use looopy_core::store::LifecycleState;
use looopy_core::{
    AgentEvent, AuthContext, CancellationToken, ConversationArtifacts, Deps, Message, ToolProvider,
    TurnContext,
};
use looopy_loop::{TurnInput, TurnSettings};
use serde_json::{Map, Value};
use tokio::sync::OwnedMutexGuard;
use tracing::Instrument;

use crate::agent::Agent;
use crate::driver::{self, FinishedTurn, Handoff, Start, TurnRun};
use crate::error::AgentError;
use crate::error::BusyHolder;
use crate::lease::Lease;
use crate::pause::PauseRelay;
use crate::telemetry;

/// Per-turn inputs beside the user message.
#[derive(Debug, Clone, Default)]
pub struct TurnOptions {
    /// Who acts in this turn, with fresh credentials; every tool call of
    /// the turn sees it (`TurnContext::auth`).
    pub auth: Option<AuthContext>,
    /// The turn's task id (A2A task); a new UUID when absent.
    pub task_id: Option<String>,
    /// Cancels the turn when fired. The turn uses a child of it, so the
    /// turn never cancels the caller's token.
    pub cancel: Option<CancellationToken>,
    /// Passed to providers and tools in `TurnContext::metadata` (the
    /// turn's number is `TurnContext::turn_number`).
    pub metadata: Map<String, Value>,
    /// Keep running when the [`AgentTurn`] is dropped before its end
    /// (default false: dropping it cancels the turn). Either way the rest
    /// of the turn moves to a task of its own and the messages are saved.
    pub keep_running_on_drop: bool,
    /// Tools offered in this turn only, beside the agent's own: the client
    /// tools a message declared (`looopy_tools::ClientTools`), for instance.
    /// Handed to the loop as [`TurnInput::tools`], not through the
    /// `TurnContext`. Not kept in the checkpoint: a turn carried on with
    /// [`Agent::resume_turn`] offers the tools given to that call.
    pub tools: Option<Arc<dyn ToolProvider>>,
    /// Settings of this turn only (system prompt, iteration and tool-call
    /// limits, wall-time limit, tool failure mode); each field set replaces
    /// the loop's value. Not kept in the checkpoint: a turn carried on with
    /// [`Agent::resume_turn`] uses the settings given to that call.
    pub settings: TurnSettings,
    /// Dependencies for this turn's tools (`TurnContext::dep`); each
    /// replaces the Agent's (and its loop's) of the same type for this
    /// turn only: a test's stand-in, a per-request client.
    pub deps: Deps,
}

impl TurnOptions {
    /// Gives this turn's tools `value` as the dependency of type `T` (see
    /// [`TurnOptions::deps`]).
    pub fn with_dep<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.deps = std::mem::take(&mut self.deps).with(value);
        self
    }

    /// No auth, a generated task id, no external cancellation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the principal of the turn.
    pub fn with_auth(mut self, auth: AuthContext) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Sets the task id.
    pub fn with_task_id(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// Cancels the turn when `token` fires.
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Adds metadata for providers and tools.
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Offers `tools` in this turn only (see [`TurnOptions::tools`]).
    pub fn with_tools(mut self, tools: Arc<dyn ToolProvider>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Sets the turn's settings (see [`TurnOptions::settings`]).
    pub fn with_settings(mut self, settings: TurnSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Sets the turn's system prompt, in place of the loop's.
    pub fn with_system_prompt(mut self, prompt: impl Into<Arc<str>>) -> Self {
        self.settings.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the turn's iteration limit, in place of the loop's.
    pub fn with_max_iterations(mut self, n: u32) -> Self {
        self.settings.max_iterations = Some(n);
        self
    }

    /// Keeps the turn running when its stream is dropped.
    pub fn keep_running_on_drop(mut self, yes: bool) -> Self {
        self.keep_running_on_drop = yes;
        self
    }
}

/// The events of a running turn, ending with the final `status-update`.
///
/// It is a [`Stream`] of [`AgentEvent`]s (the loop's events, plus an
/// `artifact-update` for each artifact a tool made). The turn runs as the
/// stream is polled, on the polling task (see the module docs). Dropping
/// it before the end cancels the turn unless
/// [`TurnOptions::keep_running_on_drop`] was set; the rest of the turn
/// then runs on a task of its own, and its messages are saved either way.
pub struct AgentTurn {
    /// What the driver handed over in its last poll and this stream has
    /// not handed out yet.
    events: Handoff,
    task_id: Arc<str>,
    turn_number: u64,
    cancel: CancellationToken,
    summary: Arc<Mutex<Option<Box<FinishedTurn>>>>,
    pause: Arc<PauseRelay>,
    cancel_on_drop: bool,
    ended: bool,
    /// The turn itself, until it has finished.
    driver: Option<Driver>,
}

/// A turn's driver, run by its reader.
type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

impl AgentTurn {
    /// The turn's task id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// 1-based number of the turn in the conversation.
    pub fn turn_number(&self) -> u64 {
        self.turn_number
    }

    /// Cancels the turn: it ends `canceled` and saves what it produced.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The turn's cancellation token.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Pauses the turn before its next model call or tool call:
    /// an `internal:execution-paused` event says when it stopped. Asked
    /// before the loop has started, it holds the first model call.
    /// Cancelling still works while paused.
    pub fn pause(&self, reason: impl Into<String>) {
        self.pause.pause(reason.into());
    }

    /// Lets a paused turn go on (`internal:execution-resumed`).
    pub fn resume(&self) {
        self.pause.resume();
    }

    /// Whether a pause is requested.
    pub fn is_paused(&self) -> bool {
        self.pause.is_paused()
    }

    /// How the turn ended, once the final event was sent.
    pub fn summary(&self) -> Option<FinishedTurn> {
        self.summary
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_deref()
            .cloned()
    }

    /// Reads every event to the end; returns them with the summary.
    pub async fn collect_all(mut self) -> (Vec<AgentEvent>, Option<FinishedTurn>) {
        let mut events = Vec::new();
        while let Some(e) = self.next().await {
            events.push(e);
        }
        let summary = self.take_summary();
        (events, summary)
    }

    /// Runs the turn to its end, discarding the events (without keeping
    /// them on the way: a long turn costs no memory here).
    pub async fn finish(mut self) -> Option<FinishedTurn> {
        while self.next().await.is_some() {}
        self.take_summary()
    }

    /// Moves the summary out (for the consuming readers: no copy).
    fn take_summary(&self) -> Option<FinishedTurn> {
        self.summary
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .map(|summary| *summary)
    }
}

impl Stream for AgentTurn {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = &mut *self;
        // The turn runs on this task: it hands events over only while
        // polled here, and what it waits on wakes this task. So its events
        // are taken without registering for a wake-up: registered, each
        // batch the turn hands over would wake this task while it runs, and
        // it would be polled again for nothing (and a server's connection
        // woken in between, to send each event on its own).
        let event = match this.events.pop() {
            Some(event) => Some(event),
            None => {
                if let Some(driver) = this.driver.as_mut()
                    && driver.as_mut().poll(cx).is_ready()
                {
                    this.driver = None;
                }
                this.events.pop()
            }
        };
        match event {
            Some(event) => {
                this.ended |= event.is_final();
                Poll::Ready(Some(event))
            }
            None if this.driver.is_some() => Poll::Pending,
            None => {
                this.ended = true;
                Poll::Ready(None)
            }
        }
    }
}

impl Drop for AgentTurn {
    fn drop(&mut self) {
        if self.cancel_on_drop && !self.ended {
            self.cancel.cancel();
        }
        // The rest of the turn runs on a task of its own (saving what it
        // produced).
        if let Some(driver) = self.driver.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(driver)),
                Err(_) => tracing::warn!(
                    task_id = %self.task_id,
                    "a turn dropped outside a Tokio runtime stopped before saving"
                ),
            }
        }
    }
}

impl std::fmt::Debug for AgentTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTurn")
            .field("task_id", &self.task_id)
            .field("turn_number", &self.turn_number)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Runs one turn: `user_message` (or `None` to
    /// continue, for instance after a failure) with a fresh `auth` for
    /// this turn's tools.
    ///
    /// Fails at once with [`AgentError::Busy`] when a turn already runs for
    /// this context (in this agent, or under the turn lock elsewhere).
    pub fn execute_turn(
        &self,
        user_message: Option<Message>,
        auth: Option<AuthContext>,
    ) -> impl Future<Output = Result<AgentTurn, AgentError>> + Send + '_ {
        let options = TurnOptions {
            auth,
            ..TurnOptions::default()
        };
        self.execute_turn_with(user_message, options)
    }

    /// [`execute_turn`](Self::execute_turn) with a task id, a cancellation
    /// token and metadata.
    ///
    /// (Not an `async fn`: that would keep the message and the options
    /// twice in the future, which every caller holds while it waits.)
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn stores its arguments twice"
    )]
    pub fn execute_turn_with(
        &self,
        user_message: Option<Message>,
        options: TurnOptions,
    ) -> impl Future<Output = Result<AgentTurn, AgentError>> + Send + '_ {
        async move {
            let guard = self.claim()?;
            let task_id: Arc<str> = match &options.task_id {
                Some(id) => Arc::from(id.as_str()),
                None => Arc::from(uuid::Uuid::new_v4().to_string()),
            };
            let span = telemetry::turn_span(&self.inner.context_id, &task_id, false);
            // Boxed: in place, the start's future (loading the agent, the
            // store's answer, the lease, the input) would take room in the
            // caller's future, which a caller that goes on to read the turn
            // holds until the turn's end.
            let begun = Box::pin(
                async {
                    if self.lifecycle() != LifecycleState::Ready {
                        // Only a session's first turn (or one after a pause) loads.
                        self.ensure_ready(false).await?;
                    }
                    self.begin(user_message, &task_id).await
                }
                .instrument(span.clone()),
            )
            .await;
            let (lease, prepared) = begun.inspect_err(|e| telemetry::record_error(&span, e))?;
            Ok(self.launch(guard, lease, Start::New(prepared), task_id, options, span))
        }
    }

    /// Carries on the turn of `task_id` from its last checkpoint, after the
    /// process that ran it died (the loop's
    /// [`resume`](looopy_loop::AgentLoop::resume): tool calls with a
    /// recorded result are not run again).
    ///
    /// With a turn lock, the turn's lease must be stranded (its owner
    /// stopped renewing it): it is taken over atomically, so of several
    /// processes trying at once exactly one resumes the turn; the others get
    /// [`AgentError::Busy`]. Without a lock the caller vouches that the turn
    /// runs nowhere else. The turn number, messages and state are saved as
    /// for any turn; a turn whose end was already saved only reports its end
    /// again. The options' task id is ignored.
    pub async fn resume_turn(
        &self,
        task_id: &str,
        options: TurnOptions,
    ) -> Result<AgentTurn, AgentError> {
        let guard = self.claim()?;
        let span = telemetry::turn_span(&self.inner.context_id, task_id, true);
        let (lease, saved) = self
            .take_over(task_id)
            .instrument(span.clone())
            .await
            .inspect_err(|e| telemetry::record_error(&span, e))?;
        Ok(self.launch(
            guard,
            lease,
            Start::Resume { saved },
            task_id.into(),
            options,
            span,
        ))
    }

    /// The start of [`resume_turn`](Self::resume_turn): the agent ready,
    /// the stranded lease taken over, the shared state read again. Returns
    /// the lease and whether the turn's end was already saved.
    async fn take_over(&self, task_id: &str) -> Result<(Option<Lease>, bool), AgentError> {
        self.ensure_ready(false).await?;
        let lease = match &self.inner.shared.turn_lock {
            None => None,
            Some(lock) => {
                let lease = Lease::take_over(
                    lock.clone(),
                    self.inner.context_id.clone(),
                    task_id,
                    self.inner.shared.settings.lock_ttl,
                )
                .await?;
                match lease {
                    Some(lease) => Some(lease),
                    None => {
                        return Err(AgentError::busy(
                            &self.inner.context_id,
                            BusyHolder::OtherOwner,
                        ));
                    }
                }
            }
        };
        if let Err(e) = self.refresh_shared_state().await {
            if let Some(lease) = lease {
                lease.release().await;
            }
            return Err(e.into());
        }
        let saved = self.state().last_turn.is_some_and(|t| t.task_id == task_id);
        // The held history may lack what the dead process saved.
        self.status().held = None;
        Ok((lease, saved))
    }

    /// The stream that runs a turn (see the module docs).
    fn launch(
        &self,
        guard: OwnedMutexGuard<()>,
        lease: Option<Lease>,
        start: Start,
        task_id: Arc<str>,
        options: TurnOptions,
        span: tracing::Span,
    ) -> AgentTurn {
        let turn_number = self.turn_count() + 1;
        telemetry::record_number(&span, turn_number);
        self.set_lifecycle(LifecycleState::Busy);
        let cancel = options
            .cancel
            .as_ref()
            .map(CancellationToken::child_token)
            .unwrap_or_default();
        let deps = self.inner.shared.settings.deps.overridden_by(&options.deps);
        let mut cx = TurnContext::new(task_id.clone(), self.inner.context_id.clone())
            .with_cancel(cancel.clone())
            .with_turn_number(turn_number)
            .with_metadata(options.metadata)
            .with_deps(deps);
        if let Some(auth) = options.auth {
            cx = cx.with_auth(auth);
        }
        cx = cx.with_artifacts(ConversationArtifacts::new(
            self.inner.shared.artifacts.clone(),
            self.inner.context_id.clone(),
        ));
        if let Some(recorder) = self.recorder(&cx, matches!(start, Start::Resume { .. })) {
            cx = cx.with_recorder(recorder);
        }
        let events = Handoff::default();
        let tx = events.clone();
        let summary = Arc::new(Mutex::new(None));
        let pause = Arc::new(PauseRelay::default());
        let run = TurnRun {
            agent: self.clone(),
            guard,
            lease,
            start,
            cx,
            turn_number,
            tx,
            summary: summary.clone(),
            pause: pause.clone(),
            input: TurnInput {
                settings: options.settings,
                tools: options.tools,
                stored_history: None,
            },
        };
        // The turn's span is open as long as its driver: the loop's
        // `invoke_agent` and the save after it nest under it.
        let turn = driver::drive(run).instrument(span);
        AgentTurn {
            events,
            task_id,
            turn_number,
            cancel,
            summary,
            pause,
            cancel_on_drop: !options.keep_running_on_drop,
            ended: false,
            driver: Some(Box::pin(turn)),
        }
    }
}
