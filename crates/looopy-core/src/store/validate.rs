//! Argument checks and the errors they give, the same in every backend.

use std::fmt::Display;
use std::ops::Range;

use super::{StoreError, StoredEvent};

/// The error of a [`MessageStore::replace_range`](super::MessageStore::replace_range)
/// whose `range` does not fit a history of `len` messages (`len` as the
/// backend knows it: a count, or "stored" before it looked).
pub fn range_out_of_bounds(
    context_id: &str,
    range: &Range<usize>,
    len: impl Display,
) -> StoreError {
    StoreError::Conflict {
        message: format!(
            "range {}..{} is out of bounds for the {len} messages of context `{context_id}`",
            range.start, range.end
        ),
    }
}

/// Checks a `replace_range` range against a history of `len` messages.
pub fn check_replace_range(
    context_id: &str,
    range: &Range<usize>,
    len: usize,
) -> Result<(), StoreError> {
    if range.start > range.end || range.end > len {
        return Err(range_out_of_bounds(context_id, range, len));
    }
    Ok(())
}

/// The error for an event id a log did not hand out: `form` says what its
/// ids look like.
pub fn foreign_event_id(id: &str, form: &str) -> StoreError {
    StoreError::NotFound {
        what: format!("event id `{id}` ({form})"),
    }
}

/// Checks an [`EventLog::replace_entries`](super::EventLog::replace_entries)
/// call: each event put takes the place of a removed entry, and of a
/// different one.
pub fn check_replacement(remove: &[String], put: &[StoredEvent]) -> Result<(), StoreError> {
    for (i, event) in put.iter().enumerate() {
        if !remove.contains(&event.id) {
            return Err(StoreError::Conflict {
                message: format!(
                    "event `{}` would take the place of an entry that is not removed",
                    event.id
                ),
            });
        }
        if put[..i].iter().any(|earlier| earlier.id == event.id) {
            return Err(StoreError::Conflict {
                message: format!("two events would take the place of entry `{}`", event.id),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn each_event_put_takes_the_place_of_its_own_removed_entry() {
        use std::sync::Arc;

        use crate::{AgentEvent, EventPayload};

        let put = |id: &str| StoredEvent {
            id: id.to_owned(),
            event: Arc::new(AgentEvent::new(
                "t".into(),
                "c".into(),
                EventPayload::Text { text: id.into() },
            )),
        };
        let remove = ["1".to_owned(), "2".to_owned()];
        assert!(check_replacement(&remove, &[put("2")]).is_ok());
        assert!(check_replacement(&remove, &[]).is_ok());
        let err = check_replacement(&remove, &[put("3")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "conflict: event `3` would take the place of an entry that is not removed"
        );
        let err = check_replacement(&remove, &[put("1"), put("1")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "conflict: two events would take the place of entry `1`"
        );
    }

    #[test]
    fn a_range_must_be_ordered_and_within_the_history() {
        assert!(check_replace_range("c", &(0..3), 3).is_ok());
        assert!(check_replace_range("c", &(3..3), 3).is_ok());
        let err = check_replace_range("c", &(1..4), 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            "conflict: range 1..4 is out of bounds for the 3 messages of context `c`"
        );
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 2..1;
        assert!(matches!(
            check_replace_range("c", &reversed, 3),
            Err(StoreError::Conflict { .. })
        ));
    }
}
