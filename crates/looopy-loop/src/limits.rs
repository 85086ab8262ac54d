//! Per-turn settings ([`TurnSettings`]).
//!
//! A turn's settings are an input of the turn, given to
//! [`AgentLoop::start_turn_with`](crate::AgentLoop::start_turn_with) (or
//! changed by a `before_turn` hook); they are not part of the
//! [`TurnContext`](looopy_core::TurnContext) that every tool sees. Each field
//! left `None` keeps the loop's own value from
//! [`AgentLoopConfig`](crate::AgentLoopConfig). The settings are merged over
//! the loop's configuration once, when the turn starts (after the
//! `before_turn` hooks); the turn reads only the merged values.
//!
//! Settings are not stored in checkpoints: a resumed turn uses the loop's
//! configuration, or the settings given to
//! [`AgentLoop::resume_with`](crate::AgentLoop::resume_with).

use std::sync::Arc;
use std::time::Duration;

use crate::config::{AgentLoopConfig, ToolFailureMode};
use crate::interest::InternalEvents;

/// Settings of one turn. Every field is optional: `None` keeps the loop's
/// value ([`AgentLoopConfig`]).
///
/// ```
/// use std::time::Duration;
/// use looopy_loop::{ToolFailureMode, TurnSettings};
///
/// let settings = TurnSettings::new()
///     .with_system_prompt("Answer in French.")
///     .with_max_iterations(3)
///     .with_max_tool_calls(5)
///     .with_max_duration(Duration::from_secs(60))
///     .with_tool_failure_mode(ToolFailureMode::Fail);
/// # let _ = settings;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnSettings {
    /// The system prompt of this turn, in place of the loop's.
    pub system_prompt: Option<Arc<str>>,
    /// Iterations before the wrap-up call, in place of the loop's.
    pub max_iterations: Option<u32>,
    /// Tool calls the turn may run, in place of the loop's limit.
    pub max_tool_calls: Option<u32>,
    /// Wall time the turn may take, in place of the loop's limit.
    pub max_duration: Option<Duration>,
    /// What a failed tool call does, in place of the loop's mode.
    pub tool_failure_mode: Option<ToolFailureMode>,
    /// The internal events the turn builds; `None` builds them all
    /// ([`InternalEvents::ALL`]). Fixed when the turn starts.
    pub internal_events: Option<InternalEvents>,
}

impl TurnSettings {
    /// No overrides: the loop's settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the system prompt of the turn.
    pub fn with_system_prompt(mut self, prompt: impl Into<Arc<str>>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the iteration limit of the turn.
    pub fn with_max_iterations(mut self, n: u32) -> Self {
        self.max_iterations = Some(n);
        self
    }

    /// Sets the tool-call limit of the turn.
    pub fn with_max_tool_calls(mut self, n: u32) -> Self {
        self.max_tool_calls = Some(n);
        self
    }

    /// Sets the wall-time limit of the turn.
    pub fn with_max_duration(mut self, limit: Duration) -> Self {
        self.max_duration = Some(limit);
        self
    }

    /// Sets what a failed tool call does in the turn.
    pub fn with_tool_failure_mode(mut self, mode: ToolFailureMode) -> Self {
        self.tool_failure_mode = Some(mode);
        self
    }

    /// Builds only these internal events in the turn (the public events
    /// are always built): a reader that uses none of them saves building
    /// each one.
    pub fn with_internal_events(mut self, wanted: InternalEvents) -> Self {
        self.internal_events = Some(wanted);
        self
    }

    /// Adds `needed` to the internal events the turn builds, when they are
    /// narrowed (a turn that builds them all already has them): what a
    /// caller of the loop needs for itself, on top of what its own caller
    /// asked for.
    pub fn also_building(mut self, needed: InternalEvents) -> Self {
        if let Some(wanted) = &mut self.internal_events {
            *wanted = *wanted | needed;
        }
        self
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == TurnSettings::default()
    }

    /// Overlays `other`: each field `other` sets replaces this one's.
    pub fn merge(&mut self, other: TurnSettings) {
        let TurnSettings {
            system_prompt,
            max_iterations,
            max_tool_calls,
            max_duration,
            tool_failure_mode,
            internal_events,
        } = other;
        if system_prompt.is_some() {
            self.system_prompt = system_prompt;
        }
        if max_iterations.is_some() {
            self.max_iterations = max_iterations;
        }
        if max_tool_calls.is_some() {
            self.max_tool_calls = max_tool_calls;
        }
        if max_duration.is_some() {
            self.max_duration = max_duration;
        }
        if tool_failure_mode.is_some() {
            self.tool_failure_mode = tool_failure_mode;
        }
        if internal_events.is_some() {
            self.internal_events = internal_events;
        }
    }

    /// The loop's configuration with these settings applied.
    pub fn apply(&self, config: &AgentLoopConfig) -> AgentLoopConfig {
        let mut config = config.clone();
        if let Some(prompt) = &self.system_prompt {
            config.system_prompt = Some(prompt.clone());
        }
        if let Some(n) = self.max_iterations {
            config.max_iterations = n;
        }
        if let Some(n) = self.max_tool_calls {
            config.max_tool_calls = Some(n);
        }
        if let Some(limit) = self.max_duration {
            config.max_duration = Some(limit);
        }
        if let Some(mode) = self.tool_failure_mode {
            config.tool_failure_mode = mode;
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_fields_keep_the_loops_values_and_set_ones_replace_them() {
        let base = AgentLoopConfig {
            system_prompt: Some("loop".into()),
            max_tool_calls: Some(9),
            ..AgentLoopConfig::default()
        };
        let merged = TurnSettings::new().with_max_iterations(2).apply(&base);
        assert_eq!(merged.system_prompt.as_deref(), Some("loop"));
        assert_eq!(merged.max_iterations, 2);
        assert_eq!(merged.max_tool_calls, Some(9));
        assert_eq!(merged.tool_failure_mode, ToolFailureMode::Continue);

        let mut settings = TurnSettings::new()
            .with_system_prompt("a")
            .with_max_tool_calls(1);
        settings.merge(TurnSettings::new().with_system_prompt("b"));
        assert_eq!(settings.system_prompt.as_deref(), Some("b"));
        assert_eq!(
            settings.max_tool_calls,
            Some(1),
            "an unset field does not clear"
        );
    }
}
