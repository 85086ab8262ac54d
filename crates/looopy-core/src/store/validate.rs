//! Argument checks and the errors they give, the same in every backend.

use std::fmt::Display;
use std::ops::Range;

use super::StoreError;

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

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
