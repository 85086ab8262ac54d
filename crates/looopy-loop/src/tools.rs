//! The merged tool registry of a turn: routing by name and bounded parallel
//! execution.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt;
use futures::future::BoxFuture;
use looopy_core::{
    ToolCall, ToolContext, ToolDefinition, ToolError, ToolOutcome, ToolProvider, ToolResult,
};
use tracing::Instrument;

use crate::events::Emitter;

/// The tools of one turn, merged from every provider and routed by name.
#[derive(Clone)]
pub struct ToolRegistry {
    definitions: Arc<[ToolDefinition]>,
    routes: Arc<HashMap<String, usize>>,
    providers: Arc<[Arc<dyn ToolProvider>]>,
}

impl ToolRegistry {
    /// Lists the tools of every provider. Two providers offering the same
    /// name is a configuration error ([`ToolError::DuplicateName`]).
    pub async fn build(
        providers: Arc<[Arc<dyn ToolProvider>]>,
        cx: &ToolContext,
    ) -> Result<Self, ToolError> {
        let listed = futures::future::try_join_all(providers.iter().map(|p| p.tools(cx))).await?;
        let mut routes = HashMap::new();
        let mut definitions = Vec::new();
        for (index, tools) in listed.into_iter().enumerate() {
            for def in tools {
                if routes.insert(def.name.clone(), index).is_some() {
                    return Err(ToolError::DuplicateName { name: def.name });
                }
                definitions.push(def);
            }
        }
        Ok(ToolRegistry {
            definitions: definitions.into(),
            routes: Arc::new(routes),
            providers,
        })
    }

    /// The merged definitions, in provider order.
    pub fn definitions(&self) -> Arc<[ToolDefinition]> {
        self.definitions.clone()
    }

    /// Whether a tool of that name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.routes.contains_key(name)
    }

    /// Runs one call. An unknown tool or a panicking tool becomes an error
    /// result (seed 003 §4.1, §4.3); nothing here fails the turn.
    pub async fn execute(&self, call: &ToolCall, cx: &ToolContext) -> (ToolResult, ToolOutcome) {
        let Some(&index) = self.routes.get(&call.name) else {
            let e = ToolError::UnknownTool {
                name: call.name.clone(),
            };
            return (
                ToolResult::error(&call.id, e.to_string()),
                ToolOutcome::Error,
            );
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
                let outcome = outcome_of(&result);
                (result, outcome)
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                let message = format!("tool '{}' panicked: {what}", call.name);
                (ToolResult::error(&call.id, message), ToolOutcome::Error)
            }
        }
    }
}

fn outcome_of(result: &ToolResult) -> ToolOutcome {
    if result.metadata.get("timedOut").and_then(|v| v.as_bool()) == Some(true) {
        ToolOutcome::Timeout
    } else if result.is_error {
        ToolOutcome::Error
    } else {
        ToolOutcome::Success
    }
}

/// A call of a batch, finished.
pub(crate) struct Finished {
    pub(crate) call: ToolCall,
    pub(crate) result: ToolResult,
    pub(crate) outcome: ToolOutcome,
    pub(crate) duration_ms: u64,
}

/// One future per call, each in its `execute_tool` span, emitting
/// `tool-start` when it starts. Boxed so that the turn's future stays `Send`
/// whatever the borrow lifetimes.
pub(crate) fn call_futures<'a>(
    registry: &'a ToolRegistry,
    calls: &'a [(usize, ToolCall)],
    cx: &'a ToolContext,
    emit: &'a Emitter,
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
            );
            async move {
                emit.tool_start(call);
                let started = Instant::now();
                let (result, outcome) = registry.execute(call, cx).await;
                if outcome != ToolOutcome::Success {
                    tracing::Span::current().record("error.type", "tool_error");
                }
                Finished {
                    call: call.clone(),
                    result,
                    outcome,
                    duration_ms: started.elapsed().as_millis() as u64,
                }
            }
            .instrument(span)
            .boxed()
        })
        .collect()
}
