//! The index entries a listing found without a value ([`Suspects`]).
//!
//! An entry whose value is missing is removed from its index once listings
//! of this process have found it missing for [`STALE_AFTER`]: its value
//! expired, or was deleted by a writer that died before cleaning up. The
//! wait counts from when the entry was first found missing, not from the
//! value's timestamp: a writer may be between adding the entry and writing
//! the value of a record whose timestamp is old.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an entry must have been found missing before a listing removes
/// it from its index.
const STALE_AFTER: Duration = Duration::from_secs(10 * 60);

/// At most this many missing entries are remembered; past it, new ones wait
/// for room (listings skip them all the same).
const MAX_SUSPECTS: usize = 10_000;

/// The index entries this process has found without a value, and since
/// when, by index. One per backend.
#[derive(Debug, Default)]
pub(crate) struct Suspects {
    first_missing: Mutex<HashMap<String, HashMap<String, Instant>>>,
}

impl Suspects {
    /// Notes what one page of `index` found: `present` members had a value,
    /// `missing` ones did not. Returns the missing members that have been
    /// missing for [`STALE_AFTER`] by `now`.
    pub(crate) fn note(
        &self,
        index: &str,
        present: &[&str],
        missing: &[&str],
        now: Instant,
    ) -> Vec<String> {
        let mut by_index = self
            .first_missing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if missing.is_empty() && !by_index.contains_key(index) {
            return Vec::new();
        }
        let suspected: usize = by_index.values().map(HashMap::len).sum();
        let members = by_index.entry(index.to_owned()).or_default();
        for member in present {
            members.remove(*member);
        }
        let mut stale = Vec::new();
        for member in missing {
            match members.get(*member) {
                Some(since) if now.duration_since(*since) >= STALE_AFTER => {
                    members.remove(*member);
                    stale.push((*member).to_owned());
                }
                Some(_) => {}
                None if suspected < MAX_SUSPECTS => {
                    members.insert((*member).to_owned(), now);
                }
                None => {}
            }
        }
        if members.is_empty() {
            by_index.remove(index);
        }
        stale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_stale_only_after_being_found_missing_for_the_whole_wait() {
        let suspects = Suspects::default();
        let start = Instant::now();
        assert!(suspects.note("i", &[], &["a", "b"], start).is_empty());
        let later = start + STALE_AFTER / 2;
        assert!(suspects.note("i", &[], &["a", "b"], later).is_empty());
        // `b` got its value meanwhile: found present, it starts over.
        assert!(suspects.note("i", &["b"], &[], later).is_empty());
        let end = start + STALE_AFTER;
        assert_eq!(suspects.note("i", &[], &["a", "b"], end), ["a"]);
        // Another index's entry of the same member is its own.
        assert!(suspects.note("j", &[], &["a"], end).is_empty());
        assert!(
            suspects
                .note("i", &[], &["b"], later + STALE_AFTER)
                .is_empty()
        );
        assert_eq!(suspects.note("i", &[], &["b"], end + STALE_AFTER), ["b"]);
    }
}
