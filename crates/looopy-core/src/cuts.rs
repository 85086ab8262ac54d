//! Safe cut points of a history: where it may be cut (by a window, a
//! compaction, the loop's context guard) without separating a tool result
//! from the call that asked for it.

use std::collections::HashMap;

use crate::{Message, Role};

/// Which cut points are safe: `safe[s]` says whether `messages[s..]` can
/// start a window (or be kept by a compaction) without separating a tool
/// result from its call. The result has `messages.len() + 1` entries; the
/// last one (an empty suffix) is always safe.
///
/// A cut `s` is unsafe when `messages[s]` is a tool message, or when some
/// tool message at `j >= s` answers a call made by an assistant message at
/// `i < s`.
pub fn safe_cut_points(messages: &[Message]) -> Vec<bool> {
    safe_cut_points_of(&messages.iter().collect::<Vec<_>>())
}

/// [`safe_cut_points`] of messages held by reference.
pub fn safe_cut_points_of(messages: &[&Message]) -> Vec<bool> {
    let n = messages.len();
    // For every tool message at j answering a call of the assistant message
    // at i < j, the cuts i+1..=j are unsafe: a difference array marks them.
    let mut diff = vec![0i64; n + 2];
    let mut caller: HashMap<&str, usize> = HashMap::new();
    for (j, m) in messages.iter().enumerate() {
        for call in &m.tool_calls {
            caller.insert(call.id.as_str(), j);
        }
        if m.role == Role::Tool
            && let Some(&i) = m.tool_call_id.as_deref().and_then(|id| caller.get(id))
            && i < j
        {
            diff[i + 1] += 1;
            diff[j + 1] -= 1;
        }
    }
    let mut safe = Vec::with_capacity(n + 1);
    let mut open = 0i64;
    for (s, d) in diff.iter().take(n + 1).enumerate() {
        open += d;
        let starts_with_tool = messages.get(s).is_some_and(|m| m.role == Role::Tool);
        safe.push(open == 0 && !starts_with_tool);
    }
    safe
}
