//! Listing through a sorted-set index whose entries may be stale.
//!
//! An index (owner → contexts, owner → tasks...) lives on another cluster
//! slot than the values it points to, so it is updated in separate steps:
//! the new entry is added before the value is written and the old one
//! removed after. A crash between steps leaves an extra entry, never a
//! missing one; listing therefore loads each value and keeps only those that
//! still belong (right owner, right context), then orders them by the
//! values' own timestamps.
//!
//! An entry whose value is missing is removed from its index once listings
//! of this process have found it missing for [`STALE_AFTER`]: its value
//! expired, or was deleted by a writer that died before cleaning up. The
//! wait counts from when the entry was first found missing, not from the
//! value's timestamp: a writer may be between adding the entry and writing
//! the value of a record whose timestamp is old.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::store::listing::{Listed, first_page};

use crate::backend::{RedisBackend, Retry};

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
    fn note(&self, index: &str, present: &[&str], missing: &[&str], now: Instant) -> Vec<String> {
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

/// The score of a timestamp: microseconds since the epoch (exact in an f64
/// for the next few centuries).
pub(crate) fn score(at: DateTime<Utc>) -> f64 {
    at.timestamp_micros() as f64
}

/// How to list one kind of value through an index.
pub(crate) struct Listing<'a, T> {
    /// The sorted set.
    pub(crate) index: String,
    /// The key of the value a member points to.
    pub(crate) key_of: &'a (dyn Fn(&str) -> String + Sync),
    /// Whether a loaded value belongs in this listing.
    pub(crate) accept: &'a (dyn Fn(&T) -> bool + Sync),
}

/// The `limit` newest values of an index that pass `accept`, in listing
/// order ([`first_page`]).
pub(crate) async fn list<T: serde::de::DeserializeOwned + Listed>(
    backend: &RedisBackend,
    listing: Listing<'_, T>,
    limit: usize,
) -> Result<Vec<T>, StoreError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let page = limit.saturating_mul(2).clamp(16, 1000);
    let mut found: Vec<(f64, T)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut stale: Vec<String> = Vec::new();
    // Pages follow the scores, not positions: every update moves its entry
    // to the top, so a writer between two pages would shift a position and
    // make the listing skip an entry further down that nobody touched. A
    // page ends at a whole score: the entries of its lowest score are read
    // together, and the next page starts below that score. An offset within
    // a score would not do: a writer adding an entry of the same score
    // between two pages would shift it.
    let mut from = "+inf".to_owned();
    loop {
        let mut entries = backend
            .query::<Vec<(String, f64)>>(
                redis::cmd("ZRANGE")
                    .arg(&listing.index)
                    .arg(&from)
                    .arg("-inf")
                    .arg("BYSCORE")
                    .arg("REV")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(page)
                    .arg("WITHSCORES"),
                Retry::Safe,
            )
            .await?;
        let Some(&(_, lowest)) = entries.last() else {
            break;
        };
        let more = entries.len() >= page;
        if more {
            // The page may have cut the lowest score's entries: read them all.
            entries.retain(|(_, s)| *s != lowest);
            let tied: Vec<(String, f64)> = backend
                .query(
                    redis::cmd("ZRANGE")
                        .arg(&listing.index)
                        .arg(lowest)
                        .arg(lowest)
                        .arg("BYSCORE")
                        .arg("WITHSCORES"),
                    Retry::Safe,
                )
                .await?;
            entries.extend(tied);
        }
        // An entry whose score moved while listing may come twice.
        entries.retain(|(member, _)| seen.insert(member.clone()));
        if !entries.is_empty() {
            let mut gets = redis::pipe();
            for (member, _) in &entries {
                gets.get((listing.key_of)(member));
            }
            let values: Vec<Option<String>> = backend.pipe(&gets, Retry::Safe).await?;
            let (mut present, mut missing) = (Vec::new(), Vec::new());
            for ((member, score), value) in entries.iter().zip(values) {
                let Some(json) = value else {
                    missing.push(member.as_str());
                    continue;
                };
                present.push(member.as_str());
                let value: T = serde_json::from_str(&json)?;
                if (listing.accept)(&value) {
                    found.push((*score, value));
                }
            }
            stale.extend(backend.suspects().note(
                &listing.index,
                &present,
                &missing,
                Instant::now(),
            ));
        }
        // Every entry at `lowest` or above has been read: the values below
        // it are all older than those kept once `limit` are found.
        if !more || found.len() >= limit {
            break;
        }
        from = format!("({lowest}");
    }
    if !stale.is_empty() {
        let mut zrem = redis::cmd("ZREM");
        zrem.arg(&listing.index).arg(&stale);
        if let Err(error) = backend.query::<i64>(&zrem, Retry::Safe).await {
            tracing::debug!(%error, "could not remove stale index entries");
        }
    }
    Ok(first_page(
        found.into_iter().map(|(_, v)| v).collect(),
        limit,
    ))
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
