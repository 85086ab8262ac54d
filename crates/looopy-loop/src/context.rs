//! The context guard: before every model call of a turn (each iteration's
//! and the wrap-up's) the loop estimates the request against the model's
//! context window. A request over it is never sent: the turn's older rounds
//! are summarised when the loop has a [`TurnCompactor`], and otherwise the
//! turn ends `failed` with an error of type [`CONTEXT_LENGTH`] that says
//! what to change. The rules, in words: `docs/behaviour.md#the-context-guard`.

use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::models::{ModelLimits, ModelRef, ProviderKind};
use looopy_core::tokens::SharedCounter;
use looopy_core::{LlmError, LlmProvider, LlmRequest, Message, TurnContext};

use crate::config::AgentLoopConfig;

/// The `error.type` of a turn the context guard ended: its next request
/// would not fit the model's context window.
pub const CONTEXT_LENGTH: &str = "context_length";

/// Estimates the prompt tokens of a request as the model will receive it.
///
/// The default counts the request with the
/// [`HeuristicCounter`](looopy_core::tokens::HeuristicCounter); give the
/// loop a counter of your own with
/// [`AgentLoopBuilder::token_counter`](crate::AgentLoopBuilder::token_counter),
/// or an estimator that knows what a model layer does to the request (the
/// Agent's counts what its window keeps) with
/// [`AgentLoopBuilder::request_estimator`](crate::AgentLoopBuilder::request_estimator).
pub trait RequestEstimator: Send + Sync {
    /// The request's prompt tokens.
    fn estimate(&self, request: &LlmRequest) -> usize;
}

/// A [`TokenCounter`](looopy_core::tokens::TokenCounter) counting whole
/// requests ([`TokenCounter::request`](looopy_core::tokens::TokenCounter::request)).
#[derive(Debug, Clone, Default)]
pub struct CountedRequests(pub SharedCounter);

impl RequestEstimator for CountedRequests {
    fn estimate(&self, request: &LlmRequest) -> usize {
        self.0.get().request(request)
    }
}

/// Summarises a turn's older rounds when its next request would not fit
/// the model's context window.
///
/// The loop hands it the messages to replace (oldest first: an earlier
/// summary of the same turn, then whole rounds, every tool call with its
/// results) and its own model (with the loop's model layers); the message
/// it returns stands for them in the turn's later requests. The turn's
/// history keeps every message: only what the model is sent changes.
/// `looopy-agent` has one (`TurnSummariser`), which an Agent with
/// compaction on gives the loop it builds.
#[async_trait]
pub trait TurnCompactor: Send + Sync {
    /// The message standing for `messages`.
    async fn summarise(
        &self,
        llm: &dyn LlmProvider,
        messages: &[Message],
        cx: &TurnContext,
    ) -> Result<Message, LlmError>;
}

/// What a loop's context guard works with (shared by its turns).
#[derive(Clone)]
pub(crate) struct ContextGuard {
    /// What the registry knows of the loop's model.
    pub(crate) known: Option<ModelLimits>,
    pub(crate) estimator: Arc<dyn RequestEstimator>,
    pub(crate) compactor: Option<Arc<dyn TurnCompactor>>,
}

impl ContextGuard {
    /// The guard of a loop around `llm`.
    pub(crate) fn new(
        llm: &dyn LlmProvider,
        estimator: Option<Arc<dyn RequestEstimator>>,
        compactor: Option<Arc<dyn TurnCompactor>>,
    ) -> Self {
        let known = ProviderKind::from_prefix(llm.provider_name())
            .and_then(|provider| ModelRef::new(provider, llm.model_name()).limits());
        ContextGuard {
            known,
            estimator: estimator.unwrap_or_else(|| Arc::new(CountedRequests::default())),
            compactor,
        }
    }

    /// The budget of a turn with `config`; `None`: no guard (no window
    /// configured, and the registry does not know the model).
    pub(crate) fn budget(&self, config: &AgentLoopConfig) -> Option<ContextBudget> {
        let window = config
            .context_window_tokens
            .or(self.known.map(|l| l.context_window))?;
        let reserve = config
            .context_reserve_tokens
            .or(config.max_tokens)
            .or(self.known.map(|l| l.max_output_tokens))
            .unwrap_or(0)
            .min(window / 2);
        Some(ContextBudget {
            window: window as usize,
            reserve: reserve as usize,
        })
    }
}

/// A turn's context window and the part of it held back for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContextBudget {
    pub(crate) window: usize,
    pub(crate) reserve: usize,
}

impl ContextBudget {
    /// Most prompt tokens a request may have.
    pub(crate) fn limit(&self) -> usize {
        self.window.saturating_sub(self.reserve)
    }
}

/// The summary standing for the turn's messages `turn_start..upto` in its
/// requests (the turn's history keeps them).
#[derive(Debug, Clone)]
pub(crate) struct TurnSummary {
    pub(crate) upto: usize,
    pub(crate) message: Arc<Message>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_testkit::ScriptedLlm;

    struct Named(&'static str, &'static str);

    #[async_trait]
    impl LlmProvider for Named {
        async fn call(
            &self,
            _: LlmRequest,
            _: &TurnContext,
        ) -> Result<looopy_core::LlmResponse, LlmError> {
            Err(LlmError::Other {
                message: "unused".into(),
            })
        }
        fn provider_name(&self) -> &str {
            self.0
        }
        fn model_name(&self) -> &str {
            self.1
        }
    }

    #[test]
    fn the_budget_comes_from_the_configuration_or_the_registry() {
        let known = ContextGuard::new(&Named("anthropic", "claude-sonnet-4-5"), None, None);
        let config = AgentLoopConfig::default();
        assert_eq!(
            known.budget(&config),
            Some(ContextBudget {
                window: 200_000,
                reserve: 64_000
            }),
            "the registry's window and output limit"
        );
        let asked = AgentLoopConfig {
            max_tokens: Some(1000),
            ..AgentLoopConfig::default()
        };
        assert_eq!(known.budget(&asked).map(|b| b.limit()), Some(199_000));
        let unknown = ContextGuard::new(&ScriptedLlm::new(), None, None);
        assert_eq!(
            unknown.budget(&config),
            None,
            "no guard for an unknown model"
        );
        let set = AgentLoopConfig {
            context_window_tokens: Some(1000),
            context_reserve_tokens: Some(900),
            ..AgentLoopConfig::default()
        };
        assert_eq!(
            unknown.budget(&set),
            Some(ContextBudget {
                window: 1000,
                reserve: 500
            }),
            "never more than half the window for the answer"
        );
    }
}
