//! The merged tool registry of a turn: routing by name and bounded parallel
//! execution.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use looopy_core::{
    EventSink, History, ToolCall, ToolDefinition, ToolError, ToolFailure, ToolOutcome,
    ToolProvider, ToolResult, ToolSignal, TurnContext,
};
use tracing::Instrument;

use crate::events::Emitter;
use crate::hooks::{FatalHook, Gate, HookContext, HookPoints, Hooks};
use crate::pause::PauseGate;
use crate::telemetry::LoopMetrics;
use crate::tool_output::{self, READ_TOOL_OUTPUT};

/// The tools of one turn, merged from every provider and routed by name.
#[derive(Clone)]
pub struct ToolRegistry {
    definitions: Arc<[ToolDefinition]>,
    /// The definitions without the tool-output reader, offered while the
    /// history holds no cut output; `None` when the reader is offered as
    /// any tool is (no tool-output cache: a tool of that name is the user's).
    until_cut: Option<Arc<[ToolDefinition]>>,
    routes: Arc<HashMap<String, usize>>,
    providers: Arc<[Arc<dyn ToolProvider>]>,
}

/// Routes `tools` to the provider at `index` and adds their definitions; a
/// name already routed is a [`ToolError::DuplicateName`].
fn add(
    routes: &mut HashMap<String, usize>,
    definitions: &mut Vec<ToolDefinition>,
    index: usize,
    tools: Vec<ToolDefinition>,
) -> Result<(), ToolError> {
    for def in tools {
        if routes.insert(def.name.clone(), index).is_some() {
            return Err(ToolError::DuplicateName { name: def.name });
        }
        definitions.push(def);
    }
    Ok(())
}

impl ToolRegistry {
    /// Lists the tools of every provider. Two providers offering the same
    /// name is a configuration error ([`ToolError::DuplicateName`]).
    pub async fn build(
        providers: Arc<[Arc<dyn ToolProvider>]>,
        cx: &TurnContext,
    ) -> Result<Self, ToolError> {
        let listed = futures::future::try_join_all(providers.iter().map(|p| p.tools(cx))).await?;
        let mut routes = HashMap::new();
        let mut definitions = Vec::new();
        for (index, tools) in listed.into_iter().enumerate() {
            add(&mut routes, &mut definitions, index, tools)?;
        }
        Ok(ToolRegistry {
            definitions: definitions.into(),
            until_cut: None,
            routes: Arc::new(routes),
            providers,
        })
    }

    /// This registry, offering the tool-output cache's reader
    /// ([`READ_TOOL_OUTPUT`]) only once the history holds a cut output (see
    /// [`offered`](Self::offered)). For a loop with a cache, whose reader
    /// is the only tool of that name.
    pub(crate) fn reader_on_demand(mut self) -> Self {
        if self.contains(READ_TOOL_OUTPUT) {
            let others = self
                .definitions
                .iter()
                .filter(|d| d.name != READ_TOOL_OUTPUT);
            self.until_cut = Some(others.cloned().collect());
        }
        self
    }

    /// The definitions offered to the model for a call on `history`: all of
    /// them, but the tool-output reader only once the history holds a cut
    /// output ([`tool_output::holds_cut_output`]). Each of the two lists is
    /// one shared `Arc`, so a provider can write each once.
    pub fn offered(&self, history: &History) -> Arc<[ToolDefinition]> {
        match &self.until_cut {
            Some(others) if !tool_output::holds_cut_output(history) => others.clone(),
            _ => self.definitions.clone(),
        }
    }

    /// This registry with the tools of one more provider after its own
    /// (a turn's own tools beside a loop's listed ones).
    pub(crate) async fn with_provider(
        &self,
        provider: Arc<dyn ToolProvider>,
        cx: &TurnContext,
    ) -> Result<Self, ToolError> {
        let listed = provider.tools(cx).await?;
        let index = self.providers.len();
        let mut routes = HashMap::clone(&self.routes);
        let mut definitions = self.definitions.to_vec();
        add(&mut routes, &mut definitions, index, listed)?;
        let providers = self.providers.iter().cloned().chain([provider]).collect();
        let merged = ToolRegistry {
            definitions: definitions.into(),
            until_cut: None,
            routes: Arc::new(routes),
            providers,
        };
        Ok(if self.until_cut.is_some() {
            merged.reader_on_demand()
        } else {
            merged
        })
    }

    /// The merged definitions, in provider order (every tool the registry
    /// runs; see [`offered`](Self::offered) for those a model call offers).
    pub fn definitions(&self) -> Arc<[ToolDefinition]> {
        self.definitions.clone()
    }

    /// Whether a tool of that name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.routes.contains_key(name)
    }

    /// The definition of the tool of that name.
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.definitions.iter().find(|d| d.name == name)
    }

    /// Whether the tool of that name is declared idempotent (an unknown
    /// tool is not): a resumed turn runs such a tool's interrupted calls
    /// again.
    pub fn is_idempotent(&self, name: &str) -> bool {
        self.definition(name).is_some_and(|d| d.idempotent)
    }

    /// Runs one call. An unknown tool becomes a
    /// [`ToolFailure::UnknownTool`] result and a panicking tool a
    /// [`ToolFailure::Panicked`] one; nothing here fails the turn. The
    /// result's `is_error` and `failure` agree ([`ToolResult::settle`]).
    /// Those two failures never pass a provider's record layer, so they
    /// are written to the turn's record here, as a failed call is there.
    pub async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> (ToolResult, ToolOutcome) {
        let started = (Utc::now(), Instant::now());
        let Some(&index) = self.routes.get(&call.name) else {
            let e = ToolError::UnknownTool {
                name: call.name.clone(),
            };
            let result = ToolResult::failed(&call.id, ToolFailure::UnknownTool, e.to_string());
            return failed_here(call, cx, started, result).await;
        };
        let provider = &self.providers[index];
        let result = AssertUnwindSafe(provider.execute(call, cx))
            .catch_unwind()
            .await;
        match result {
            Ok(mut result) => {
                // Providers quote the id they were given; make sure of it.
                if result.tool_call_id != call.id {
                    result.tool_call_id.clone_from(&call.id);
                }
                result.settle();
                let outcome = ToolOutcome::of(&result);
                (result, outcome)
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                let message = format!("tool '{}' panicked: {what}", call.name);
                let result = ToolResult::failed(&call.id, ToolFailure::Panicked, message);
                failed_here(call, cx, started, result).await
            }
        }
    }
}

/// A call the registry answered itself with a failure (no provider, or one
/// that panicked past its record layer): recorded as a tool-call step from
/// `started`, like a call a provider answered.
async fn failed_here(
    call: &ToolCall,
    cx: &TurnContext,
    started: (DateTime<Utc>, Instant),
    result: ToolResult,
) -> (ToolResult, ToolOutcome) {
    if let Some(recorder) = &cx.recorder {
        recorder
            .tool_call(started.0, started.1.elapsed(), call, &result)
            .await;
    }
    (result, ToolOutcome::Error)
}

/// A call of a batch, finished.
pub(crate) struct Finished {
    pub(crate) call: ToolCall,
    pub(crate) result: ToolResult,
    pub(crate) outcome: ToolOutcome,
    pub(crate) duration_ms: u64,
    /// A hook failure that must end the turn.
    pub(crate) fatal: Option<FatalHook>,
    /// The question a hook asks a person before the call may run (the call
    /// did not run).
    pub(crate) asked: Option<String>,
}

/// A call that started (its `internal:tool-start` was sent) and has not
/// finished.
pub(crate) struct InFlight {
    call: ToolCall,
    started: Instant,
    span: tracing::Span,
}

/// The calls of a batch that are running, in the order they started.
#[derive(Default)]
pub(crate) struct Running(std::sync::Mutex<Vec<InFlight>>);

impl Running {
    fn start(&self, call: &ToolCall, started: Instant) {
        if let Ok(mut list) = self.0.lock() {
            list.push(InFlight {
                call: call.clone(),
                started,
                span: tracing::Span::current(),
            });
        }
    }

    /// The call finished (its `internal:tool-complete` is sent by the batch).
    pub(crate) fn finish(&self, call_id: &str) {
        if let Ok(mut list) = self.0.lock() {
            list.retain(|f| f.call.id != call_id);
        }
    }

    /// The turn was cancelled: every call still running ends with a
    /// [`ToolFailure::Cancelled`] result, reported by its own
    /// `internal:tool-complete` and its span's `error.type`. The results are
    /// not recorded (a resumed turn treats those calls as interrupted).
    pub(crate) fn cancel_all(&self, emit: &Emitter) {
        let list = match self.0.lock() {
            Ok(mut list) => std::mem::take(&mut *list),
            Err(_) => return,
        };
        for f in list {
            let result = ToolResult::failed(
                &f.call.id,
                ToolFailure::Cancelled,
                "the turn was cancelled while the call ran",
            );
            f.span.record("error.type", ToolFailure::Cancelled.as_str());
            emit.tool_complete(
                &f.call.name,
                &result,
                ToolOutcome::of(&result),
                f.started.elapsed().as_millis() as u64,
            );
        }
    }
}

/// What every call of a batch shares.
pub(crate) struct CallEnv<'a> {
    pub(crate) running: &'a Running,
    pub(crate) registry: &'a ToolRegistry,
    pub(crate) cx: &'a TurnContext,
    pub(crate) emit: &'a Emitter,
    pub(crate) hooks: &'a Hooks,
    pub(crate) pause: &'a PauseGate,
    pub(crate) iteration: u32,
    pub(crate) metrics: &'a LoopMetrics,
    /// A person approved these calls: the approval hooks do not run again.
    pub(crate) approved: bool,
}

impl CallEnv<'_> {
    /// One call: wait while paused, approval and `before_tool` hooks, the
    /// tool, `after_tool` hooks. Hooks and the tool get the turn's context
    /// with the call's id as its idempotency key.
    async fn run(&self, call: &ToolCall) -> Finished {
        if !self.pause.wait(&self.cx.cancel, self.emit).await {
            // Cancelled while paused: the turn drops this future.
            return std::future::pending().await;
        }
        let mut call = call.clone();
        let emit = self.emit.clone();
        let cx = self
            .cx
            .clone()
            .with_call_id(call.id.as_str())
            .with_events(EventSink::new(move |payload| emit.forward(payload)));
        let hcx = HookContext {
            turn: cx.clone(),
            iteration: self.iteration,
        };
        let gate = if !self.hooks.any_at(HookPoints::APPROVE_TOOL)
            && !self.hooks.any_at(HookPoints::BEFORE_TOOL)
        {
            Ok(Gate::Run)
        } else {
            self.hooks
                .gate_tool(&hcx, self.emit, &mut call, self.approved)
                .await
        };
        self.emit.tool_start(&call);
        let started = Instant::now();
        self.running.start(&call, started);
        let (mut result, _) = match gate {
            Ok(Gate::Run) => self.registry.execute(&call, &cx).await,
            Ok(Gate::Skip(result)) => (result, ToolOutcome::Success),
            Ok(Gate::Ask(question)) => {
                // Like a client tool's call: it waits, and the turn ends
                // `input-required` once the batch is done.
                let result = ToolResult::text(&call.id, "waiting for approval")
                    .with_signal(ToolSignal::InputRequired);
                return Finished {
                    call,
                    result,
                    outcome: ToolOutcome::Success,
                    duration_ms: 0,
                    fatal: None,
                    asked: Some(question),
                };
            }
            Err(fatal) => {
                let result = ToolResult::error(&call.id, &fatal.message);
                return Finished {
                    call,
                    result,
                    outcome: ToolOutcome::Error,
                    duration_ms: 0,
                    fatal: Some(fatal),
                    asked: None,
                };
            }
        };
        let mut fatal = None;
        if self.hooks.any_at(HookPoints::AFTER_TOOL) {
            fatal = self
                .hooks
                .after_tool(&hcx, self.emit, &call, &mut result)
                .await
                .err();
        }
        // An `after_tool` hook may have changed the result: what it leaves
        // is what is reported.
        result.settle();
        let outcome = ToolOutcome::of(&result);
        if let Some(kind) = result.failure {
            tracing::Span::current().record("error.type", kind.as_str());
        }
        let elapsed = started.elapsed();
        self.metrics
            .record_tool(&call.name, elapsed, result.failure);
        Finished {
            call,
            result,
            outcome,
            duration_ms: elapsed.as_millis() as u64,
            fatal,
            asked: None,
        }
    }
}

/// One future per call, each in its `execute_tool` span. Boxed so that the
/// turn's future stays `Send` whatever the borrow lifetimes.
pub(crate) fn call_futures<'a>(
    env: &'a CallEnv<'a>,
    calls: &'a [(usize, ToolCall)],
) -> Vec<BoxFuture<'a, Finished>> {
    calls
        .iter()
        .map(|(_, call)| {
            let span = tracing::info_span!(
                "execute_tool",
                otel.name = %format_args!("execute_tool {}", call.name),
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = %call.name,
                gen_ai.tool.call.id = %call.id,
                error.type = tracing::field::Empty,
                looopy.cache.hit = tracing::field::Empty,
                gen_ai.tool.call.arguments = tracing::field::Empty,
                gen_ai.tool.call.result = tracing::field::Empty,
            );
            if !looopy_core::genai_content::capture_content() {
                return env.run(call).instrument(span).boxed();
            }
            // Content capture: the call's arguments and its result's text.
            span.record("gen_ai.tool.call.arguments", call.arguments.as_str());
            let recorded = span.clone();
            async move {
                let finished = env.run(call).await;
                recorded.record(
                    "gen_ai.tool.call.result",
                    finished.result.text_content().as_str(),
                );
                finished
            }
            .instrument(span)
            .boxed()
        })
        .collect()
}
