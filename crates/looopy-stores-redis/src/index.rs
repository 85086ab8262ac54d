//! Listing through a sorted-set index whose entries may be stale.
//!
//! An index (owner → contexts, owner → tasks...) lives on another cluster
//! slot than the values it points to, so it is updated in separate steps:
//! the new entry is added before the value is written and the old one
//! removed after. A crash between steps leaves an extra entry, never a
//! missing one; listing therefore loads each value and keeps only those that
//! still belong (right owner, right context), then orders them by the
//! values' own timestamps.

use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::store::listing::{Listed, first_page};

use crate::backend::{RedisBackend, Retry};

/// An entry whose value is missing and whose score is older than this is
/// removed from the index while listing (its value expired or was deleted
/// by a writer that died before cleaning up). Younger ones are left alone: a
/// writer may be between adding the entry and writing the value.
const STALE_AFTER_MICROS: f64 = 10.0 * 60.0 * 1_000_000.0;

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
    let mut stale: Vec<String> = Vec::new();
    let now = score(Utc::now());
    // Pages follow the scores, not positions: every update moves its entry
    // to the top, so a writer between two pages would shift a position and
    // make the listing skip an entry further down that nobody touched.
    // The next page starts at the last score seen, past the entries of
    // that score already seen.
    let mut from = "+inf".to_owned();
    let mut seen_at_from = 0usize;
    loop {
        let entries: Vec<(String, f64)> = backend
            .query(
                redis::cmd("ZRANGE")
                    .arg(&listing.index)
                    .arg(&from)
                    .arg("-inf")
                    .arg("BYSCORE")
                    .arg("REV")
                    .arg("LIMIT")
                    .arg(seen_at_from)
                    .arg(page)
                    .arg("WITHSCORES"),
                Retry::Safe,
            )
            .await?;
        if entries.is_empty() {
            break;
        }
        let mut gets = redis::pipe();
        for (member, _) in &entries {
            gets.get((listing.key_of)(member));
        }
        let values: Vec<Option<String>> = backend.pipe(&gets, Retry::Safe).await?;
        for ((member, score), value) in entries.iter().zip(values) {
            match value {
                Some(json) => {
                    let value: T = serde_json::from_str(&json)?;
                    if (listing.accept)(&value) {
                        found.push((*score, value));
                    }
                }
                None if now - score > STALE_AFTER_MICROS => stale.push(member.clone()),
                None => {}
            }
        }
        if entries.len() < page {
            break;
        }
        if let Some(&(_, last)) = entries.last() {
            let at_last = entries.iter().rev().take_while(|(_, s)| *s == last).count();
            let last = last.to_string();
            if last == from {
                seen_at_from += at_last;
            } else {
                from = last;
                seen_at_from = at_last;
            }
        }
        if found.len() >= limit {
            // Enough, unless the entries further down tie with the last kept one.
            let mut scores: Vec<f64> = found.iter().map(|(s, _)| *s).collect();
            scores.sort_by(|a, b| b.total_cmp(a));
            let last_kept = scores[limit - 1];
            let last_fetched = entries.last().map_or(f64::NEG_INFINITY, |(_, s)| *s);
            if last_fetched < last_kept {
                break;
            }
        }
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
