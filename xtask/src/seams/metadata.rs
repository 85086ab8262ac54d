//! String metadata keys that carry meaning between crates.
//!
//! The approximation, over the shipped crates (not `looopy-testkit` and
//! `looopy-bench`, which exist for tests and measurements; not
//! `#[cfg(test)]`, not `tests/`):
//!
//! - a *metadata key* is a string literal, or an upper-case constant
//!   resolved through the workspace's `const NAME: &str = "…"`, used as the
//!   key of a `get` / `get_mut` / `contains_key` / `remove` / `insert` /
//!   `entry` call or an index on a receiver whose name contains `meta`
//!   (`message.metadata`, `meta`, `metadata_mut()`, …);
//! - a crate *reads* a key when it accesses it so, when it reads the same
//!   literal from any map or JSON value (`.get("isError")` on a data part,
//!   `v["pendingToolCalls"]`), or when it names the key's constant (a use
//!   or a re-export: the key is then part of its interface);
//! - a key *carries meaning between crates* when more than one crate
//!   touches it and at least one reads it.
//!
//! Keys written in a `json!` object, or reached only through a helper
//! function, are not seen.

use std::collections::{BTreeMap, BTreeSet};

use super::model::Crate;
use super::scan::Key;

/// One key and the crates that touch it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct KeyUse {
    /// Crates that write it.
    pub(super) writers: BTreeSet<String>,
    /// Crates that read it.
    pub(super) readers: BTreeSet<String>,
}

/// Crates left out of the count: they serve tests and measurements.
const LEFT_OUT: &[&str] = &["looopy-testkit", "looopy-bench"];

/// The keys touched in more than one crate and read in at least one.
pub(super) fn shared_keys(crates: &[Crate]) -> BTreeMap<String, KeyUse> {
    let mut keys = all_keys(crates);
    keys.retain(|_, k| !k.readers.is_empty() && k.writers.union(&k.readers).count() > 1);
    keys
}

/// Every fixed key accessed on a metadata map, and the crates touching it.
pub(super) fn all_keys(crates: &[Crate]) -> BTreeMap<String, KeyUse> {
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for f in crates.iter().flat_map(|c| &c.files) {
        for (name, value) in &f.facts.str_consts {
            values.entry(name.clone()).or_insert_with(|| value.clone());
        }
    }
    let crates: Vec<&Crate> = crates
        .iter()
        .filter(|c| !LEFT_OUT.contains(&c.name.as_str()))
        .collect();
    let mut keys: BTreeMap<String, KeyUse> = BTreeMap::new();
    let mut key_consts: BTreeMap<String, String> = BTreeMap::new();
    for c in &crates {
        for access in c.files.iter().flat_map(|f| &f.facts.meta) {
            let key = match &access.key {
                Key::Literal(s) => s.clone(),
                Key::Const(name) => {
                    let value = values
                        .get(name)
                        .cloned()
                        .unwrap_or_else(|| format!("{name}?"));
                    key_consts.insert(name.clone(), value.clone());
                    value
                }
            };
            let entry = keys.entry(key).or_default();
            if access.write {
                entry.writers.insert(c.name.clone());
            } else {
                entry.readers.insert(c.name.clone());
            }
        }
    }
    for c in &crates {
        let files = &c.files;
        for read in files.iter().flat_map(|f| &f.facts.literal_reads) {
            if let Some(k) = keys.get_mut(read) {
                k.readers.insert(c.name.clone());
            }
        }
        for (name, value) in &key_consts {
            if files.iter().any(|f| f.facts.constants_named.contains(name))
                && let Some(k) = keys.get_mut(value)
            {
                k.readers.insert(c.name.clone());
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn krate(name: &str, src: &str) -> Crate {
        Crate::new(name, &[("lib.rs".to_string(), src.to_string())])
    }

    #[test]
    fn a_key_counts_when_another_crate_reads_it() {
        let core = krate(
            "core",
            r#"pub const IS_ERROR: &str = "isError";
               fn mark(m: &mut Message) { m.metadata.insert(IS_ERROR.into(), true.into()); m.metadata.insert("own".into(), 1.into()); }
               fn own(m: &Message) { m.metadata.get("own"); }"#,
        );
        let server = krate(
            "server",
            r#"fn read(m: &Message) { m.metadata.get(core::IS_ERROR); m.metadata.get("interrupted"); }"#,
        );
        let agent = krate(
            "agent",
            r#"fn mark(m: &mut Message) { m.metadata.insert("interrupted".into(), true.into()); m.metadata.insert("alone".into(), 1.into()); }"#,
        );
        // Reads the progress payload's `isError` and re-exports the constant.
        let cli = krate(
            "cli",
            r#"pub use core::IS_ERROR; fn f(data: &Value) { data.get("isError"); data["alone2"]; }"#,
        );
        // Test support is left out: its own key does not count.
        let testkit = krate(
            "looopy-testkit",
            r#"fn f(m: &Message) { m.metadata.get("own"); }"#,
        );
        let keys = shared_keys(&[core, server, agent, cli, testkit]);
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["interrupted", "isError"]);
        assert_eq!(
            keys["isError"].writers,
            BTreeSet::from(["core".to_string()])
        );
        assert_eq!(
            keys["isError"].readers,
            BTreeSet::from(["cli".to_string(), "core".to_string(), "server".to_string()])
        );
    }
}
