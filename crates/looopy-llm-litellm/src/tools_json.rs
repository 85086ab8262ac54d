//! The `tools` of a request, written as JSON once per tool list.
//!
//! A loop sends the same tool list (one `Arc<[ToolDefinition]>`, kept by
//! its registry) with every model call of every turn, and writing the
//! tools' schemas was about 4% of a served turn's instructions (more than
//! the conversation's messages). The provider keeps the JSON of the last
//! list it wrote, and the list itself (so that its address cannot be
//! reused by another): a request with that same list copies the JSON in.
//! A different list is written anew and replaces it; providers shared by
//! agents with different tools then write as before.

use std::sync::{Arc, Mutex, PoisonError};

use looopy_core::ToolDefinition;
use serde_json::value::RawValue;

use crate::wire::Tools;

/// A tool list and its JSON.
type Written = (Arc<[ToolDefinition]>, Arc<RawValue>);

/// The last tool list written and its JSON.
#[derive(Debug, Default)]
pub(crate) struct ToolsJson {
    last: Mutex<Option<Written>>,
}

impl ToolsJson {
    /// The JSON array of `tools`, as a request's `tools` entry.
    pub(crate) fn of(&self, tools: &Arc<[ToolDefinition]>) -> serde_json::Result<Arc<RawValue>> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((list, json)) = &*last
            && Arc::ptr_eq(list, tools)
        {
            return Ok(Arc::clone(json));
        }
        let json: Arc<RawValue> = serde_json::value::to_raw_value(&Tools(tools))?.into();
        *last = Some((Arc::clone(tools), Arc::clone(&json)));
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
}
