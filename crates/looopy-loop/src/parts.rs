//! [`LoopParts`]: what a loop is made of, shared by the loop's clones and
//! by every turn it runs (a turn holds the parts, not the loop).

use std::sync::Arc;

use looopy_core::store::CheckpointStore;
use looopy_core::{LlmProvider, ToolProvider};

use crate::config::AgentLoopConfig;
use crate::context::ContextGuard;
use crate::hooks::Hooks;
use crate::layers::LlmStack;
use crate::telemetry::LoopMetrics;
use crate::tools::ToolRegistry;

/// What an [`AgentLoop`] is made of: shared by its clones and by every
/// turn it runs.
pub(crate) struct LoopParts {
    pub(crate) llm: Arc<dyn LlmProvider>,
    pub(crate) tools: Arc<[Arc<dyn ToolProvider>]>,
    /// The registry of `tools`, listed once, when every provider says its
    /// tools are fixed (`ToolProvider::tools_are_fixed`); `None` when one
    /// does not. Shared by the loop's clones.
    pub(crate) fixed_registry: Option<Arc<tokio::sync::OnceCell<ToolRegistry>>>,
    /// Whether the loop has a tool-output cache, whose reader is offered
    /// only once a cut output is in the history (`ToolRegistry::offered`).
    pub(crate) reader_on_demand: bool,
    pub(crate) task_store: Option<Arc<dyn CheckpointStore>>,
    pub(crate) config: Arc<AgentLoopConfig>,
    pub(crate) hooks: Hooks,
    pub(crate) metrics: LoopMetrics,
    pub(crate) llm_stack: LlmStack,
    /// Keeps every request of a turn within the model's context window.
    pub(crate) context: ContextGuard,
    /// Typed state for tools, under each turn's own.
    pub(crate) deps: looopy_core::Deps,
}
