//! What listings of stored values share, whatever the backend: which
//! values a listing takes and the order it returns them in (newest first,
//! ties broken by id, so pages are stable).

use std::cmp::{Ordering, Reverse};

use chrono::{DateTime, Utc};

use super::{AgentState, TaskRecord};
use crate::record::ExecutionRecord;

/// A stored value that listings return newest first.
pub trait Listed {
    /// Its timestamp and its id, as listings order them.
    fn listing_key(&self) -> (DateTime<Utc>, &str);
}

impl Listed for TaskRecord {
    fn listing_key(&self) -> (DateTime<Utc>, &str) {
        (self.updated_at, &self.task_id)
    }
}

impl Listed for AgentState {
    fn listing_key(&self) -> (DateTime<Utc>, &str) {
        (self.last_activity, &self.context_id)
    }
}

impl Listed for ExecutionRecord {
    fn listing_key(&self) -> (DateTime<Utc>, &str) {
        (self.started_at, &self.task_id)
    }
}

/// A borrowed value lists as the value does, so that a backend holding its
/// values (memory) pages through references and clones only the page.
impl<T: Listed> Listed for &T {
    fn listing_key(&self) -> (DateTime<Utc>, &str) {
        T::listing_key(self)
    }
}

/// The listing order: the newest first, then by id ascending.
pub fn newest_first<T: Listed>(a: &T, b: &T) -> Ordering {
    let (ta, ia) = a.listing_key();
    let (tb, ib) = b.listing_key();
    (Reverse(ta), ia).cmp(&(Reverse(tb), ib))
}

/// The first `limit` of `values` in listing order.
pub fn first_page<T: Listed>(mut values: Vec<T>, limit: usize) -> Vec<T> {
    values.sort_by(|a, b| newest_first(a, b));
    values.truncate(limit);
    values
}

impl TaskRecord {
    /// Whether a task listing filtered by `owner` and `context_id` (each
    /// `None`: any) takes this record.
    pub fn listed_by(&self, owner: Option<&str>, context_id: Option<&str>) -> bool {
        owner.is_none_or(|o| self.owner.as_deref() == Some(o))
            && context_id.is_none_or(|c| self.context_id == c)
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::task::{TaskState, TaskStatus};

    fn record(task: &str, owner: Option<&str>, age_s: i64) -> TaskRecord {
        let mut r = TaskRecord::new(
            task,
            "c1",
            owner.map(Into::into),
            TaskStatus::new(TaskState::Working),
        );
        r.updated_at = DateTime::<Utc>::UNIX_EPOCH + Duration::seconds(1000 - age_s);
        r
    }

    #[test]
    fn pages_are_newest_first_with_ties_by_id() {
        let page = first_page(
            vec![
                record("b", None, 5),
                record("old", None, 9),
                record("a", None, 5),
                record("new", None, 0),
            ],
            3,
        );
        let ids: Vec<_> = page.iter().map(|r| r.task_id.as_str()).collect();
        assert_eq!(ids, ["new", "a", "b"]);
    }

    #[test]
    fn borrowed_values_page_in_the_same_order() {
        let held = [
            record("b", None, 5),
            record("old", None, 9),
            record("a", None, 5),
        ];
        let page = first_page(held.iter().collect(), 2);
        let ids: Vec<_> = page.iter().map(|r| r.task_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
    }

    #[test]
    fn a_filter_takes_only_matching_owner_and_context() {
        let r = record("t", Some("alice"), 0);
        assert!(r.listed_by(None, None));
        assert!(r.listed_by(Some("alice"), Some("c1")));
        assert!(!r.listed_by(Some("bob"), None));
        assert!(!r.listed_by(None, Some("c2")));
        assert!(!record("t", None, 0).listed_by(Some("alice"), None));
    }
}
