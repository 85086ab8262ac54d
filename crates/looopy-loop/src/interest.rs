//! [`InternalEvents`]: which of a turn's `internal:*` events are built.
//!
//! A turn reports its model calls, tool calls and lifecycle as internal
//! events (about 18 for a turn with two tool rounds). A server streaming
//! only the public A2A events reads none of them, so the turn is told the
//! set its readers use and builds nothing else: an event outside the set
//! is never allocated, not filtered afterwards.

use std::ops::BitOr;

/// A set of internal event kinds a turn builds (see
/// [`TurnSettings::with_internal_events`](crate::TurnSettings::with_internal_events)).
/// The public events (`task`, `status-update`, `artifact-update`) are
/// always built.
///
/// ```
/// use looopy_loop::InternalEvents;
///
/// let wanted = InternalEvents::TOOL_COMPLETE | InternalEvents::USAGE;
/// assert!(wanted.contains(InternalEvents::USAGE));
/// assert!(!wanted.contains(InternalEvents::TOOL_START));
/// assert!(InternalEvents::ALL.contains(InternalEvents::TOOL_PROGRESS));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InternalEvents(u32);

impl InternalEvents {
    /// No internal event.
    pub const NONE: Self = Self(0);
    /// `internal:llm-call`, `internal:llm-response` and `internal:llm-error`.
    pub const MODEL_CALLS: Self = Self(1);
    /// `internal:usage`: each model call's tokens and the turn's total.
    pub const USAGE: Self = Self(1 << 1);
    /// `internal:text` and `internal:reasoning`: the model's text as it streams.
    pub const TEXT: Self = Self(1 << 2);
    /// `internal:tool-call-begin` and `internal:tool-call-delta`: tool calls
    /// as the model streams them.
    pub const TOOL_CALL_STREAM: Self = Self(1 << 3);
    /// `internal:tool-detected`: the calls of a model response.
    pub const TOOL_DETECTED: Self = Self(1 << 4);
    /// `internal:tool-start`.
    pub const TOOL_START: Self = Self(1 << 5);
    /// `internal:tool-complete`, with the tool's result.
    pub const TOOL_COMPLETE: Self = Self(1 << 6);
    /// `internal:tool-interrupted`.
    pub const TOOL_INTERRUPTED: Self = Self(1 << 7);
    /// `internal:checkpoint`.
    pub const CHECKPOINT: Self = Self(1 << 8);
    /// `internal:execution-start`, `-end`, `-paused` and `-resumed`.
    pub const EXECUTION: Self = Self(1 << 9);
    /// `internal:iteration-start` and `internal:iteration-complete`.
    pub const ITERATIONS: Self = Self(1 << 10);
    /// `internal:hook-error`.
    pub const HOOK_ERRORS: Self = Self(1 << 11);
    /// The internal events tools add through their context's event sink
    /// (`internal:sub-agent`, `internal:cache-hit`, a tool's own).
    pub const FROM_TOOLS: Self = Self(1 << 12);
    /// `internal:tool-call-done`: a streamed tool call's whole arguments,
    /// before it runs.
    pub const TOOL_CALL_DONE: Self = Self(1 << 13);
    /// `internal:limit-reached`: the turn reached an iteration or
    /// tool-call limit.
    pub const LIMITS: Self = Self(1 << 14);
    /// What the A2A tool-progress extension reports: tool calls as they
    /// stream, start and complete, usage, and sub-agents' events.
    pub const TOOL_PROGRESS: Self = Self(
        Self::TOOL_CALL_STREAM.0
            | Self::TOOL_START.0
            | Self::TOOL_COMPLETE.0
            | Self::USAGE.0
            | Self::FROM_TOOLS.0,
    );
    /// Every internal event (what a turn builds unless told otherwise).
    pub const ALL: Self = Self(u32::MAX);

    /// Whether every kind of `other` is in this set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets together.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl Default for InternalEvents {
    /// [`ALL`](Self::ALL): a turn nobody narrowed builds every event.
    fn default() -> Self {
        Self::ALL
    }
}

impl BitOr for InternalEvents {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        self.union(other)
    }
}
