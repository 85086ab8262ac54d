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
//! of this process have found it missing for a while (the backend's
//! `Suspects`, in `suspects.rs`).

use std::collections::HashSet;
use std::time::Instant;

use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::store::listing::{Listed, first_page};

use crate::backend::{RedisBackend, Retry};

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
