//! The `tools` of a request, written as JSON once per tool list.
//!
//! A loop sends the same tool list (one `Arc<[ToolDefinition]>`, kept by
//! its registry) with every model call of every turn, and the tools'
//! schemas are often a larger part of a request than the conversation's
//! messages. The provider keeps the JSON of the last
//! list it wrote, and the list itself (so that its address cannot be
//! reused by another): a request with that same list copies the JSON in.
//! It keeps the last two: a loop with a tool-output cache offers two
//! lists, with and without its reader (`ToolRegistry::offered`), and
//! conversations of both kinds take turns. Another list is written anew
//! and replaces the older; providers shared by agents with more tool lists
//! than that write as before.

use std::sync::{Arc, Mutex, PoisonError};

use looopy_core::ToolDefinition;
use serde_json::value::RawValue;

use crate::wire::Tools;

/// A tool list and its JSON.
type Written = (Arc<[ToolDefinition]>, Arc<RawValue>);

/// The last two tool lists written and their JSON, the newest first.
#[derive(Debug, Default)]
pub(crate) struct ToolsJson {
    last: Mutex<[Option<Written>; 2]>,
}

impl ToolsJson {
    /// The JSON array of `tools`, as a request's `tools` entry.
    pub(crate) fn of(&self, tools: &Arc<[ToolDefinition]>) -> serde_json::Result<Arc<RawValue>> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let found = last
            .iter()
            .position(|w| w.as_ref().is_some_and(|(list, _)| Arc::ptr_eq(list, tools)));
        let json: Arc<RawValue> = match found.and_then(|i| last[i].as_ref()) {
            Some((_, json)) => Arc::clone(json),
            None => serde_json::value::to_raw_value(&Tools(tools))?.into(),
        };
        // The list used now goes first; the other one stays second.
        if found != Some(0) {
            last.swap(0, 1);
            if found.is_none() {
                last[0] = Some((Arc::clone(tools), Arc::clone(&json)));
            }
        }
        Ok(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_list_is_written_once_and_another_list_anew() {
        let cache = ToolsJson::default();
        let tools: Arc<[ToolDefinition]> =
            vec![ToolDefinition::without_parameters("add", "adds")].into();
        let first = cache.of(&tools).unwrap();
        assert!(first.get().contains(r#""name":"add""#), "{}", first.get());
        assert!(
            Arc::ptr_eq(&first, &cache.of(&tools.clone()).unwrap()),
            "the clone of a list is that list"
        );
        // An equal list that is another `Arc` is written again (and correctly).
        let other: Arc<[ToolDefinition]> =
            vec![ToolDefinition::without_parameters("sub", "subtracts")].into();
        let second = cache.of(&other).unwrap();
        assert!(second.get().contains(r#""name":"sub""#));
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(Arc::ptr_eq(&second, &cache.of(&other).unwrap()));
    }

    #[test]
    fn two_lists_taking_turns_are_each_written_once_and_a_third_evicts_the_older() {
        let cache = ToolsJson::default();
        let list = |name: &str| -> Arc<[ToolDefinition]> {
            vec![ToolDefinition::without_parameters(name, "a tool")].into()
        };
        let (with_reader, without) = (list("read_tool_output"), list("add"));
        let a = cache.of(&with_reader).unwrap();
        let b = cache.of(&without).unwrap();
        for _ in 0..3 {
            assert!(Arc::ptr_eq(&a, &cache.of(&with_reader).unwrap()));
            assert!(Arc::ptr_eq(&b, &cache.of(&without).unwrap()));
        }
        // `without` was used last: a third list replaces `with_reader`.
        let third = list("sub");
        cache.of(&third).unwrap();
        assert!(Arc::ptr_eq(&b, &cache.of(&without).unwrap()));
        let again = cache.of(&with_reader).unwrap();
        assert!(!Arc::ptr_eq(&a, &again), "written anew");
        assert_eq!(a.get(), again.get());
    }
}
