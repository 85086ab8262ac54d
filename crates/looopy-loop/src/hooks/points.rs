//! [`HookPoints`]: the points of a turn a hook runs at.

use std::ops::BitOr;

/// The points of a turn a [`Hook`](super::Hook) implements, which the loop
/// calls it at (a set: combine with `|`).
///
/// A hook says which through [`Hook::points`](super::Hook::points). The
/// default is [`ALL`](Self::ALL), which is always right; a hook that names
/// only the points it implements is not called at the others, which saves a
/// call (and its boxed future) per point, per model call and per tool call.
///
/// ```
/// use looopy_loop::hooks::HookPoints;
///
/// let points = HookPoints::BEFORE_TOOL | HookPoints::AFTER_TOOL;
/// assert!(points.contains(HookPoints::AFTER_TOOL));
/// assert!(!points.contains(HookPoints::AFTER_LLM));
/// assert!(HookPoints::ALL.contains(points));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HookPoints(u16);

impl HookPoints {
    /// None: the hook is never called.
    pub const NONE: Self = Self(0);
    /// [`Hook::before_turn`](super::Hook::before_turn).
    pub const BEFORE_TURN: Self = Self(1);
    /// [`Hook::before_llm`](super::Hook::before_llm).
    pub const BEFORE_LLM: Self = Self(1 << 1);
    /// [`Hook::after_llm`](super::Hook::after_llm).
    pub const AFTER_LLM: Self = Self(1 << 2);
    /// [`Hook::approve_tool`](super::Hook::approve_tool).
    pub const APPROVE_TOOL: Self = Self(1 << 3);
    /// [`Hook::before_tool`](super::Hook::before_tool).
    pub const BEFORE_TOOL: Self = Self(1 << 4);
    /// [`Hook::after_tool`](super::Hook::after_tool).
    pub const AFTER_TOOL: Self = Self(1 << 5);
    /// [`Hook::pause_check`](super::Hook::pause_check).
    pub const PAUSE_CHECK: Self = Self(1 << 6);
    /// [`Hook::incomplete_work`](super::Hook::incomplete_work).
    pub const INCOMPLETE_WORK: Self = Self(1 << 7);
    /// [`Hook::after_turn`](super::Hook::after_turn).
    pub const AFTER_TURN: Self = Self(1 << 8);
    /// Every point (what a hook is called at unless it says otherwise).
    pub const ALL: Self = Self(u16::MAX);

    /// Whether every point of `other` is in this set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets together.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl Default for HookPoints {
    /// [`ALL`](Self::ALL).
    fn default() -> Self {
        Self::ALL
    }
}

impl BitOr for HookPoints {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        self.union(other)
    }
}
