//! [`MemoryRetention`] and the map that applies it: how long the memory
//! stores keep what they hold, so that a long-running process on the memory
//! backend does not grow without bound.
//!
//! It mirrors the Redis stores' TTLs (`task_ttl_secs` for checkpoints,
//! `ttl_secs` for everything else, counted from the last write) and adds
//! what only memory needs, a cap on the entries each store keeps, the
//! least recently used going first (Redis has `maxmemory-policy` for that).

use std::time::{Duration, Instant};

use hashbrown::HashMap;
use hashbrown::hash_map::EntryRef;

use serde::{Deserialize, Serialize};

/// How long the memory stores keep entries. Every field has a default, so
/// a `looopy.toml` `[store]` table needs only what differs:
///
/// ```toml
/// [store]
/// backend = "memory"
/// task_ttl_secs = 86400    # checkpoints, a day after their last save (0: forever)
/// ttl_secs = 3600          # a conversation's messages, artifacts, state, events, task records (0: forever)
/// max_entries = 10000      # most conversations / tasks each store keeps, least recently used first out (0: no cap)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryRetention {
    /// Lifetime of a checkpoint after its last save, in seconds; 0: none.
    pub task_ttl_secs: u64,
    /// Lifetime of every other entry (a conversation's messages, artifacts
    /// and state; a task's events and record) after its last write, in
    /// seconds; 0: none.
    pub ttl_secs: u64,
    /// Most entries each store keeps (conversations in the message,
    /// artifact and state stores; tasks in the checkpoint, event and task
    /// record stores); past it the least recently used (read or written)
    /// are dropped. 0: no cap. Default 10,000: a process on the memory
    /// backend serving conversations for months must not keep them all.
    pub max_entries: usize,
}

impl Default for MemoryRetention {
    /// The Redis stores' TTLs (checkpoints live a day, the rest has no
    /// expiry) and a cap of 10,000 entries per store.
    fn default() -> Self {
        MemoryRetention {
            task_ttl_secs: 24 * 60 * 60,
            ttl_secs: 0,
            max_entries: 10_000,
        }
    }
}

impl MemoryRetention {
    /// Keeps everything forever (what the stores did before retention).
    pub fn unbounded() -> Self {
        MemoryRetention {
            task_ttl_secs: 0,
            ttl_secs: 0,
            max_entries: 0,
        }
    }

    /// Checkpoint lifetime.
    pub fn task_ttl(&self) -> Option<Duration> {
        (self.task_ttl_secs > 0).then(|| Duration::from_secs(self.task_ttl_secs))
    }

    /// Lifetime of every other entry.
    pub fn ttl(&self) -> Option<Duration> {
        (self.ttl_secs > 0).then(|| Duration::from_secs(self.ttl_secs))
    }

    /// The cap, if any.
    pub fn cap(&self) -> Option<usize> {
        (self.max_entries > 0).then_some(self.max_entries)
    }
}

/// How often at most the whole map is swept for expired entries (expired
/// entries that are read are dropped at once, whatever the sweep).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

struct Slot<V> {
    value: V,
    /// Last write: expiry counts from here.
    written: Instant,
    /// Last read or write, as a counter: the LRU order.
    used: u64,
}

impl<V> Slot<V> {
    /// Whether it expired by `now` under `ttl`.
    fn expired(&self, ttl: Option<Duration>, now: Instant) -> bool {
        ttl.is_some_and(|ttl| now.saturating_duration_since(self.written) >= ttl)
    }
}

/// A map from keys to entries that expire `ttl` after their last write and
/// that holds at most `cap` entries, dropping the least recently used.
/// Entries that [`keep_while`](Self::keep_while) says are in use (a running
/// task's event log or record) are never dropped for the cap: the cap counts
/// the others, and the map holds more than `cap` entries while more than
/// that are in use.
///
/// Used under each store's lock. Evicting over the cap scans the map, so
/// it drops a sixteenth of the cap at a time (amortised O(1) per insert);
/// the map then holds between 15/16 of the cap and the cap.
///
/// Every store reaches its entries through this map several times a turn,
/// so it hashes with foldhash (hashbrown's default: seeded per process,
/// several times cheaper than SipHash on the ids used as keys), looks a
/// key up once where the operation allows it, copies a key only to insert
/// it, and reads the clock only when entries expire.
pub(crate) struct Retained<V> {
    map: HashMap<String, Slot<V>>,
    ttl: Option<Duration>,
    /// The write time of every entry when nothing expires (no clock read).
    epoch: Instant,
    cap: Option<usize>,
    clock: u64,
    next_sweep: Instant,
    /// Values evicted or swept, kept for the caller to free after it
    /// releases its lock ([`take_evicted`](Self::take_evicted)); `None`:
    /// freed at once, under the lock ([`defer_drops`](Self::defer_drops)
    /// was not called).
    evicted: Option<Vec<V>>,
    /// Whether an entry is in use, so that the cap must not drop it.
    in_use: Option<fn(&V) -> bool>,
}

impl<V> std::fmt::Debug for Retained<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retained")
            .field("len", &self.map.len())
            .field("ttl", &self.ttl)
            .field("cap", &self.cap)
            .finish_non_exhaustive()
    }
}

impl<V> Default for Retained<V> {
    fn default() -> Self {
        Self::new(None, None)
    }
}

impl<V> Retained<V> {
    /// An empty map with this expiry and cap (`None`: none).
    pub(crate) fn new(ttl: Option<Duration>, cap: Option<usize>) -> Self {
        let epoch = Instant::now();
        Retained {
            map: HashMap::new(),
            ttl,
            epoch,
            cap,
            clock: 0,
            next_sweep: epoch + SWEEP_EVERY,
            evicted: None,
            in_use: None,
        }
    }

    /// Never drops, for the cap, an entry that `in_use` says is in use
    /// (expiry still applies).
    pub(crate) fn keep_while(mut self, in_use: fn(&V) -> bool) -> Self {
        self.in_use = Some(in_use);
        self
    }

    /// What [`keep_while`](Self::keep_while) says: whether an entry is in use.
    fn in_use(&self) -> impl Fn(&str, &V) -> bool + use<V> {
        let in_use = self.in_use;
        move |_, value| in_use.is_some_and(|f| f(value))
    }

    /// Keeps what eviction and expiry drop until [`take_evicted`](Self::take_evicted),
    /// so that a caller frees large values (a task's event log) after
    /// releasing the lock the map is used under. A caller that defers must
    /// take them after every write.
    pub(crate) fn defer_drops(mut self) -> Self {
        self.evicted = Some(Vec::new());
        self
    }

    /// What eviction and expiry dropped since the last call (empty unless
    /// [`defer_drops`](Self::defer_drops)): free it outside the lock.
    pub(crate) fn take_evicted(&mut self) -> Vec<V> {
        self.evicted
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Drops `gone` now, or keeps it for [`take_evicted`](Self::take_evicted).
    fn discard(&mut self, gone: impl Iterator<Item = V>) {
        match &mut self.evicted {
            Some(kept) => kept.extend(gone),
            None => gone.for_each(drop),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The time a write stamps: the clock only when entries expire.
    fn now(&self) -> Instant {
        if self.ttl.is_some() {
            Instant::now()
        } else {
            self.epoch
        }
    }

    /// The entry of `key`, counted as used.
    pub(crate) fn get(&mut self, key: &str) -> Option<&V> {
        self.get_mut_with(key, false).map(|value| &*value)
    }

    /// The entry of `key` without counting a use (for inspection).
    pub(crate) fn peek(&self, key: &str) -> Option<&V> {
        let slot = self.map.get(key)?;
        (!slot.expired(self.ttl, self.now())).then_some(&slot.value)
    }

    /// The entry of `key` to change in place: a write (expiry starts again).
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.get_mut_with(key, true)
    }

    /// The live entry of `key`, counted as used and, for a write, as
    /// written; an expired one is dropped. One lookup.
    fn get_mut_with(&mut self, key: &str, write: bool) -> Option<&mut V> {
        let (ttl, now, used) = (self.ttl, self.now(), self.tick());
        match self.map.entry_ref(key) {
            EntryRef::Vacant(_) => None,
            EntryRef::Occupied(entry) if entry.get().expired(ttl, now) => {
                entry.remove();
                None
            }
            EntryRef::Occupied(entry) => {
                let slot = entry.into_mut();
                slot.used = used;
                if write {
                    slot.written = now;
                }
                Some(&mut slot.value)
            }
        }
    }

    /// Whether `key` holds a live entry (an expired one is left for the
    /// write that follows to replace).
    fn is_live(&self, key: &str, now: Instant) -> bool {
        self.map
            .get(key)
            .is_some_and(|slot| !slot.expired(self.ttl, now))
    }

    /// Writes `value` under `key`; the value it replaces, if any.
    pub(crate) fn insert(&mut self, key: String, value: V) -> Option<V> {
        let now = self.now();
        if !self.is_live(&key, now) {
            self.make_room(self.in_use());
        }
        let used = self.tick();
        let slot = Slot {
            value,
            written: now,
            used,
        };
        let old = self.map.insert(key, slot)?;
        (!old.expired(self.ttl, now)).then_some(old.value)
    }

    /// The entry of `key` to write, made with `make` when there is none: a
    /// write (expiry starts again).
    pub(crate) fn entry_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        let in_use = self.in_use();
        self.entry_or_insert_with_keeping(key, make, in_use)
    }

    /// [`entry_or_insert_with`](Self::entry_or_insert_with), where `keep`
    /// says which entries are in use (for what the map's values do not
    /// show: a log someone follows).
    pub(crate) fn entry_or_insert_with_keeping(
        &mut self,
        key: &str,
        make: impl FnOnce() -> V,
        keep: impl Fn(&str, &V) -> bool,
    ) -> &mut V {
        let now = self.now();
        let live = self.is_live(key, now);
        if !live {
            self.make_room(keep);
        }
        let used = self.tick();
        let slot = match self.map.entry_ref(key) {
            EntryRef::Occupied(entry) => {
                let slot = entry.into_mut();
                if !live {
                    // Expired, not yet swept: it starts afresh.
                    slot.value = make();
                }
                slot
            }
            EntryRef::Vacant(entry) => entry.insert(Slot {
                value: make(),
                written: now,
                used,
            }),
        };
        slot.used = used;
        slot.written = now;
        &mut slot.value
    }

    /// Removes `key`; its value if it was there and live.
    pub(crate) fn remove(&mut self, key: &str) -> Option<V> {
        let slot = self.map.remove(key)?;
        (!slot.expired(self.ttl, self.now())).then_some(slot.value)
    }

    /// Live entries (expired ones not yet swept are not counted).
    pub(crate) fn len(&self) -> usize {
        let now = self.now();
        self.map
            .values()
            .filter(|s| !s.expired(self.ttl, now))
            .count()
    }

    /// Entries held, expired ones not yet swept included: O(1), unlike
    /// [`len`](Self::len), for decisions on the hot path.
    pub(crate) fn held(&self) -> usize {
        self.map.len()
    }

    /// Live entries, without counting uses.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        let now = self.now();
        self.map
            .iter()
            .filter(move |(_, s)| !s.expired(self.ttl, now))
            .map(|(k, s)| (k, &s.value))
    }

    /// Drops expired entries, at most once per [`SWEEP_EVERY`].
    fn maintain(&mut self) {
        let Some(ttl) = self.ttl else {
            return;
        };
        let now = Instant::now();
        if now < self.next_sweep {
            return;
        }
        self.next_sweep = now + SWEEP_EVERY;
        let gone: Vec<V> = self
            .map
            .extract_if(|_, s| s.expired(Some(ttl), now))
            .map(|(_, s)| s.value)
            .collect();
        self.discard(gone.into_iter());
    }

    /// Before a new key goes in: drops expired entries (at most once per
    /// [`SWEEP_EVERY`]) and, at the cap, the least recently used sixteenth
    /// of it (at least one entry) among the entries `keep` does not keep.
    fn make_room(&mut self, keep: impl Fn(&str, &V) -> bool) {
        self.maintain();
        let Some(cap) = self.cap else {
            return;
        };
        if self.map.len() < cap {
            return;
        }
        let target = cap.saturating_sub((cap / 16).max(1));
        let mut order: Vec<u64> = self
            .map
            .iter()
            .filter(|(k, s)| !keep(k, &s.value))
            .map(|(_, s)| s.used)
            .collect();
        let drop_count = (self.map.len() - target).min(order.len());
        if drop_count == 0 {
            return;
        }
        // The `drop_count`-th smallest use: everything at or under it goes.
        let (_, threshold, _) = order.select_nth_unstable(drop_count - 1);
        let threshold = *threshold;
        let gone: Vec<V> = self
            .map
            .extract_if(|k, s| s.used <= threshold && !keep(k, &s.value))
            .map(|(_, s)| s.value)
            .collect();
        self.discard(gone.into_iter());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_drops_the_least_recently_used_first() {
        let mut m: Retained<u32> = Retained::new(None, Some(4));
        for (i, k) in ["a", "b", "c", "d"].iter().enumerate() {
            m.insert((*k).to_owned(), i as u32);
        }
        // "a" is read, so "b" is now the least recently used.
        assert_eq!(m.get("a"), Some(&0));
        m.insert("e".into(), 4);
        assert_eq!(m.len(), 4);
        assert!(m.peek("b").is_none());
        for k in ["a", "c", "d", "e"] {
            assert!(m.peek(k).is_some(), "{k} was evicted");
        }
    }

    #[test]
    fn entries_in_use_are_never_dropped_for_the_cap() {
        // Odd values are "in use" (a running task): the cap drops only the others.
        let mut m = Retained::new(None, Some(4)).keep_while(|v: &u32| v % 2 == 1);
        for (i, v) in [1u32, 3, 5, 7, 9].into_iter().enumerate() {
            m.insert(format!("run{i}"), v);
        }
        assert_eq!(m.len(), 5, "in-use entries stay over the cap");
        m.insert("ended0".into(), 2);
        m.insert("ended1".into(), 4);
        for i in 0..5 {
            assert!(m.peek(&format!("run{i}")).is_some(), "run{i} was dropped");
        }
        assert!(
            m.peek("ended0").is_none(),
            "the older ended entry goes first"
        );
        assert_eq!(m.peek("ended1"), Some(&4));
    }

    #[test]
    fn deferred_drops_hand_the_evicted_values_to_the_caller() {
        let mut m: Retained<String> = Retained::new(None, Some(16)).defer_drops();
        for i in 0..16 {
            m.insert(format!("k{i}"), format!("v{i}"));
        }
        assert!(m.take_evicted().is_empty());
        m.insert("k16".into(), "v16".into());
        // At the cap a sixteenth (one entry) goes: the least recently used.
        assert_eq!(m.take_evicted(), ["v0"]);
        assert!(m.take_evicted().is_empty(), "taken once");
        assert!(m.peek("k0").is_none());
        // Without deferring, nothing is kept.
        let mut plain: Retained<String> = Retained::new(None, Some(1));
        plain.insert("a".into(), "x".into());
        plain.insert("b".into(), "y".into());
        assert!(plain.take_evicted().is_empty());
        assert_eq!(plain.held(), 1);
    }

    #[test]
    fn a_large_cap_evicts_in_batches_and_never_holds_more_than_the_cap() {
        let mut m: Retained<usize> = Retained::new(None, Some(160));
        for i in 0..1000 {
            m.insert(format!("k{i}"), i);
            assert!(m.len() <= 160);
        }
        assert!(m.len() >= 150);
        // The newest entries are the ones kept.
        assert_eq!(m.peek("k999"), Some(&999));
        assert!(m.peek("k0").is_none());
    }

    #[test]
    fn entries_expire_after_their_last_write_not_their_last_read() {
        let mut m: Retained<u32> = Retained::new(Some(Duration::from_millis(40)), None);
        m.insert("a".into(), 1);
        *m.entry_or_insert_with("b", || 0) += 2;
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(m.get("a"), Some(&1)); // a read does not extend it
        *m.get_mut("b").unwrap_or(&mut 0) += 1; // a write does
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(m.get("a"), None);
        assert_eq!(m.get("b"), Some(&3));
        assert_eq!(m.len(), 1);
        // A key that expired starts afresh.
        std::thread::sleep(Duration::from_millis(45));
        assert_eq!(*m.entry_or_insert_with("b", || 10), 10);
    }

    #[test]
    fn the_defaults_mirror_the_redis_stores() {
        let r = MemoryRetention::default();
        assert_eq!(r.task_ttl(), Some(Duration::from_secs(86_400)));
        assert_eq!((r.ttl(), r.cap()), (None, Some(10_000)));
        assert_eq!(MemoryRetention::unbounded().task_ttl(), None);
    }
}
