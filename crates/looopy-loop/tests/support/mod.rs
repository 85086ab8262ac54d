//! Test tools for the loop's tests: tools backed by closures.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::future::BoxFuture;
use looopy_core::{
    AgentEvent, EventPayload, History, LlmResponse, Role, ToolCall, ToolDefinition, ToolError,
    ToolProvider, ToolResult, TurnContext,
};
use looopy_loop::TurnStream;
use looopy_testkit::ScriptedLlm;

type Handler = Arc<dyn Fn(ToolCall, TurnContext) -> BoxFuture<'static, ToolResult> + Send + Sync>;

/// Tools backed by closures.
#[derive(Clone, Default)]
pub struct FnTools {
    defs: Vec<ToolDefinition>,
    handlers: HashMap<String, Handler>,
}

impl FnTools {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn tool<F, Fut>(mut self, name: &str, f: F) -> Self
    where
        F: Fn(ToolCall, TurnContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ToolResult> + Send + 'static,
    {
        self.defs.push(ToolDefinition::without_parameters(
            name,
            format!("the {name} tool"),
        ));
        self.handlers
            .insert(name.to_owned(), Arc::new(move |c, cx| Box::pin(f(c, cx))));
        self
    }

    /// Declares the tool `name` (registered before) idempotent.
    pub fn idempotent(mut self, name: &str) -> Self {
        for def in self.defs.iter_mut().filter(|d| d.name == name) {
            def.idempotent = true;
        }
        self
    }

    /// A tool that answers `"<name>:<arguments>"` after `delay`.
    pub fn echo(self, name: &str, delay: Duration) -> Self {
        let n = name.to_owned();
        self.tool(name, move |c, _| {
            let n = n.clone();
            async move {
                tokio::time::sleep(delay).await;
                ToolResult::text(&c.id, format!("{n}:{}", c.arguments))
            }
        })
    }
}

#[async_trait]
impl ToolProvider for FnTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(self.defs.clone())
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        match self.handlers.get(&call.name) {
            Some(h) => h(call.clone(), cx.clone()).await,
            None => ToolResult::error(&call.id, "not mine"),
        }
    }
}

/// Counts how many calls run at once and the most seen.
#[derive(Clone, Default)]
pub struct Concurrency {
    now: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
}

impl Concurrency {
    pub fn enter(&self) -> ConcurrencyGuard {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        ConcurrencyGuard(self.now.clone())
    }
    pub fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

pub struct ConcurrencyGuard(Arc<AtomicUsize>);
impl Drop for ConcurrencyGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sets a flag when dropped (to see that a future was dropped).
pub struct DropFlag(pub Arc<std::sync::atomic::AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A model that calls the tools `(id, name, arguments)` in one answer, then
/// answers `text`.
pub fn calls_then(calls: &[(&str, &str, &str)], text: &str) -> ScriptedLlm {
    let calls = calls
        .iter()
        .map(|(id, name, arguments)| ToolCall::new(*id, *name, *arguments))
        .collect();
    ScriptedLlm::new()
        .respond(LlmResponse::tool_calls("", calls))
        .respond(LlmResponse::text(text))
}

/// The text of the message that the final event of a turn carries.
pub fn final_text(events: &[AgentEvent]) -> String {
    let EventPayload::StatusUpdate { status, .. } = &*final_event(events).payload else {
        panic!("the final event is a status update")
    };
    status
        .message
        .as_ref()
        .map(|m| m.text())
        .expect("the final event carries a message")
}

/// The texts of the tool messages in `history`, in order.
pub fn tool_texts(history: &History) -> Vec<String> {
    history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect()
}

pub async fn drain(mut s: TurnStream) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Some(e) = s.next().await {
        out.push(e);
    }
    out
}

#[allow(unused_imports)] // not every test binary needs them
pub use looopy_testkit::events::{final_event, final_metadata as final_meta, kinds};

/// Installs an in-memory meter provider as the global one (a loop takes its
/// instruments from it when built); read the exporter after
/// `provider.force_flush()`. For a test binary of its own: the global
/// provider is the process's.
pub fn install_metrics() -> (
    opentelemetry_sdk::metrics::InMemoryMetricExporter,
    opentelemetry_sdk::metrics::SdkMeterProvider,
) {
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    opentelemetry::global::set_meter_provider(provider.clone());
    (exporter, provider)
}
