//! `[history]` in `looopy.toml`: how much of a conversation the model is
//! sent, when older messages are summarised, and what happens to long tool
//! results. The defaults: the last 50 messages (a tool call always travels
//! with its results), no automatic compaction (the Agent never compacts on
//! its own unless told), and tool results over 20,000 characters stored as
//! artifacts that the model pages through with `read_tool_output`.

use looopy_agent::{
    AgentBuilder, CompactionConfig, DEFAULT_TOOL_OUTPUT_MAX_CHARS,
    DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS, DEFAULT_WINDOW_MESSAGES, WindowConfig,
};
use looopy_core::models::ModelLimits;
use serde::Deserialize;

/// `[history]`. Every limit of 0 means "none".
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HistorySection {
    /// Most history messages sent to the model.
    pub window_messages: usize,
    /// Most estimated prompt tokens sent to the model (0: the model's
    /// context window when the registry knows the model, else none).
    pub window_tokens: usize,
    /// Summarise the older messages once the history holds more than this.
    pub compact_after_messages: usize,
    /// Summarise the older messages once the history passes about this many tokens.
    pub compact_after_tokens: usize,
    /// Newest messages a compaction keeps verbatim.
    pub compact_keep_recent: usize,
    /// Tool results longer than this (characters) are stored as artifacts.
    pub tool_output_max_chars: usize,
    /// How much of such a result the model sees at once.
    pub tool_output_preview_chars: usize,
}

impl Default for HistorySection {
    fn default() -> Self {
        HistorySection {
            window_messages: DEFAULT_WINDOW_MESSAGES,
            window_tokens: 0,
            compact_after_messages: 0,
            compact_after_tokens: 0,
            compact_keep_recent: 10,
            tool_output_max_chars: DEFAULT_TOOL_OUTPUT_MAX_CHARS,
            tool_output_preview_chars: DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS,
        }
    }
}

impl HistorySection {
    /// The window these settings ask for.
    pub fn window(&self) -> WindowConfig {
        self.window_for(None)
    }

    /// The window for a model of known `limits`: without a `window_tokens`
    /// of its own, the token budget is the model's context window, with
    /// room held back for the answer (`answer_tokens`, `[llm] max_tokens`,
    /// or else the model's output limit; never more than half the window).
    /// An unknown model (`None`) gets no token budget unless one is set.
    pub fn window_for(&self, model: Option<(ModelLimits, Option<u32>)>) -> WindowConfig {
        let mut window = WindowConfig::unbounded();
        if self.window_messages > 0 {
            window = window.with_max_messages(self.window_messages);
        }
        if self.window_tokens > 0 {
            window = window.with_max_tokens(self.window_tokens);
        } else if let Some((limits, answer_tokens)) = model {
            let context = usize::try_from(limits.context_window).unwrap_or(usize::MAX);
            let answer = answer_tokens.unwrap_or(limits.max_output_tokens);
            let answer = usize::try_from(answer)
                .unwrap_or(usize::MAX)
                .min(context / 2);
            window = window.with_max_tokens(context).with_reserve_tokens(answer);
        }
        window
    }

    /// The compaction these settings ask for (`None`: never automatic).
    pub fn compaction(&self) -> Option<CompactionConfig> {
        let config = match (self.compact_after_messages, self.compact_after_tokens) {
            (0, 0) => return None,
            (0, tokens) => CompactionConfig::after_tokens(tokens),
            (messages, 0) => CompactionConfig::after_messages(messages),
            (messages, tokens) => CompactionConfig {
                max_tokens: Some(tokens),
                ..CompactionConfig::after_messages(messages)
            },
        };
        Some(config.keep_recent(self.compact_keep_recent))
    }

    /// Applies the window, the compaction and the tool-output cache to an
    /// Agent being built (long tool results go to its artifact store).
    pub fn apply(&self, builder: AgentBuilder) -> AgentBuilder {
        self.apply_for(builder, None)
    }

    /// [`apply`](Self::apply), with the window of a model of known limits
    /// (see [`window_for`](Self::window_for)).
    pub fn apply_for(
        &self,
        builder: AgentBuilder,
        model: Option<(ModelLimits, Option<u32>)>,
    ) -> AgentBuilder {
        let mut builder = builder.window(self.window_for(model));
        if let Some(compaction) = self.compaction() {
            builder = builder.compaction(compaction);
        }
        if self.tool_output_max_chars > 0 {
            builder = builder
                .tool_output_cache(self.tool_output_max_chars, self.tool_output_preview_chars);
        } else {
            builder = builder.without_tool_output_cache();
        }
        builder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_model_gives_the_window_its_context_unless_a_budget_is_set() {
        let sonnet = looopy_core::models::ModelRef::parse("anthropic:claude-sonnet-4-5")
            .unwrap()
            .unwrap()
            .limits()
            .unwrap();
        let h = HistorySection::default();
        let w = h.window_for(Some((sonnet, None)));
        assert_eq!(w.max_tokens, Some(200_000));
        assert_eq!(w.reserve_tokens, 64_000, "the model's output limit");
        assert_eq!(w.max_messages, Some(50), "the message limit stays");
        let w = h.window_for(Some((sonnet, Some(4096))));
        assert_eq!((w.max_tokens, w.reserve_tokens), (Some(200_000), 4096));
        let huge = ModelLimits {
            context_window: 8000,
            max_output_tokens: 32_000,
        };
        assert_eq!(h.window_for(Some((huge, None))).reserve_tokens, 4000);
        // An explicit budget wins; an unknown model gets none.
        let set: HistorySection = toml::from_str("window_tokens = 8000").unwrap();
        let w = set.window_for(Some((sonnet, None)));
        assert_eq!((w.max_tokens, w.reserve_tokens), (Some(8000), 0));
        assert_eq!(h.window_for(None).max_tokens, None);
    }

    #[test]
    fn the_defaults_keep_fifty_messages_and_never_compact() {
        let h = HistorySection::default();
        assert_eq!(h.window().max_messages, Some(50));
        assert_eq!(h.window().max_tokens, None);
        assert!(h.compaction().is_none());
    }

    #[test]
    fn zero_means_no_limit_and_both_compaction_limits_combine() {
        let h: HistorySection = toml::from_str(
            "window_messages = 0\nwindow_tokens = 8000\ncompact_after_messages = 100\ncompact_after_tokens = 50000\ncompact_keep_recent = 4",
        )
        .unwrap();
        assert_eq!(h.window().max_messages, None);
        assert_eq!(h.window().max_tokens, Some(8000));
        let c = h.compaction().unwrap();
        assert!(c.auto);
        assert_eq!(
            (c.max_messages, c.max_tokens, c.keep_recent),
            (Some(100), Some(50000), 4)
        );
        assert!(toml::from_str::<HistorySection>("window = 3").is_err());
    }
}
