//! Checkpoints that build on the stored history
//! ([`TaskCheckpoint::stored_history`]): what a store keeps of one, and how
//! it is made whole again on load.
//!
//! An Agent turn starts from the conversation's stored history, whole, and
//! says so in each checkpoint it saves (a [`HistoryMark`]: the history's
//! epoch and how many of its messages lead the checkpoint's). A store that
//! keeps the checkpoint's messages beside the history needs to keep only
//! the turn's own ones ([`own_part`]), so that a save costs what the turn
//! added, not the conversation's length. On load it reads the history's
//! first `len` messages and its epoch, and [`rebuild`] puts them in front,
//! or fails with [`StoreError::HistoryRewritten`] when the history was
//! rewritten since (its epoch changed, or it is shorter than the mark).
//!
//! The SQL stores keep such a checkpoint as two JSON texts ([`encode`]):
//! the checkpoint without its messages and the array of its own messages,
//! and read it back with [`decode`]; the Redis store does the same within
//! its scripts.

use serde_json::Value;

use super::{HistoryMark, StoreError, TaskCheckpoint};
use crate::history::History;
use crate::message::Message;

/// What a store keeps of `checkpoint`: the checkpoint with only the
/// messages after its [`history_mark`](TaskCheckpoint::history_mark) (all
/// of them when it has none), and that mark, kept in
/// [`stored_history`](TaskCheckpoint::stored_history). Cheap: the
/// messages are shared, not copied.
pub fn own_part(checkpoint: &TaskCheckpoint) -> (TaskCheckpoint, Option<HistoryMark>) {
    let mark = checkpoint.history_mark().cloned();
    let base = mark.as_ref().map_or(0, |mark| mark.len);
    let own = TaskCheckpoint {
        messages: checkpoint.messages.skip(base),
        stored_history: mark.clone(),
        ..checkpoint.clone()
    };
    (own, mark)
}

/// The stored history a checkpoint's load read: the history's epoch (none
/// when the conversation has no history) and its first messages, at most
/// the mark's length.
#[derive(Debug, Clone, Default)]
pub struct StoredPrefix {
    /// The history's epoch when it was read.
    pub epoch: Option<String>,
    /// Its first messages, oldest first.
    pub messages: Vec<Message>,
}

/// The whole checkpoint from what [`own_part`] kept (`own`) and the stored
/// history read for it: the first `mark.len` messages of the history
/// under the mark's epoch, then the checkpoint's own. A checkpoint without
/// a mark is returned as it is (`prefix` is not looked at).
///
/// Fails with [`StoreError::HistoryRewritten`] when the history's epoch is
/// not the mark's, or it holds fewer than `mark.len` messages.
pub fn rebuild(own: TaskCheckpoint, prefix: StoredPrefix) -> Result<TaskCheckpoint, StoreError> {
    let Some(mark) = &own.stored_history else {
        return Ok(own);
    };
    if mark.len == 0 {
        return Ok(own);
    }
    if prefix.epoch.as_deref() != Some(mark.epoch.as_str()) || prefix.messages.len() != mark.len {
        return Err(StoreError::HistoryRewritten {
            context_id: own.context_id.to_string(),
            task_id: own.task_id.to_string(),
        });
    }
    let mut messages = History::from(prefix.messages);
    messages.extend_shared(own.messages.iter_from(0).cloned());
    Ok(TaskCheckpoint { messages, ..own })
}

/// How many leading messages of the history a checkpoint kept by
/// [`own_part`] needs read back (0: none).
pub fn prefix_len(own: &TaskCheckpoint) -> usize {
    own.stored_history.as_ref().map_or(0, |mark| mark.len)
}

/// A checkpoint as a store keeps it: its [`own_part`] as two JSON texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedCheckpoint {
    /// The checkpoint without its `messages` (its mark included, as
    /// `storedHistory`: `{"epoch": …, "len": …}`).
    pub head: String,
    /// The JSON array of its own messages (those after the mark).
    pub messages: String,
}

/// [`own_part`] of `checkpoint`, as JSON (see [`EncodedCheckpoint`]).
pub fn encode(checkpoint: &TaskCheckpoint) -> Result<EncodedCheckpoint, StoreError> {
    let (own, _) = own_part(checkpoint);
    let messages = serde_json::to_string(&own.messages)?;
    let head = TaskCheckpoint {
        messages: History::new(),
        ..own
    };
    let mut head = serde_json::to_value(&head)?;
    if let Value::Object(map) = &mut head {
        map.remove("messages");
    }
    Ok(EncodedCheckpoint {
        head: head.to_string(),
        messages,
    })
}

/// The checkpoint [`encode`] wrote, with its own messages only (give it
/// to [`rebuild`]). Without `messages`, `head` is a whole checkpoint (what
/// a store wrote before it kept the two apart).
pub fn decode(head: &str, messages: Option<&str>) -> Result<TaskCheckpoint, StoreError> {
    let Some(messages) = messages else {
        return Ok(serde_json::from_str(head)?);
    };
    let mut head: Value = serde_json::from_str(head)?;
    let messages: Value = serde_json::from_str(messages)?;
    match &mut head {
        Value::Object(map) => {
            map.insert("messages".into(), messages);
        }
        _ => {
            return Err(StoreError::Serialization {
                message: "a stored checkpoint is not a JSON object".into(),
            });
        }
    }
    Ok(serde_json::from_value(head)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::TaskState;
    use chrono::Utc;

    fn checkpoint(messages: &[&str], mark: Option<HistoryMark>) -> TaskCheckpoint {
        TaskCheckpoint {
            task_id: "t".into(),
            context_id: "c".into(),
            agent_id: "a".into(),
            iteration: 1,
            state: TaskState::Working,
            messages: messages.iter().map(|m| Message::user(*m)).collect(),
            turn_start: 2,
            usage: Default::default(),
            completed_tool_results: Vec::new(),
            streamed_answers: Vec::new(),
            stored_history: mark,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            metadata: Default::default(),
        }
    }

    fn mark(len: usize) -> HistoryMark {
        HistoryMark {
            epoch: "e1".into(),
            len,
        }
    }

    #[test]
    fn the_own_part_holds_the_messages_after_the_mark_and_rebuilds_whole() {
        let whole = checkpoint(&["a", "b", "c", "d"], Some(mark(2)));
        let (own, kept) = own_part(&whole);
        assert_eq!(kept, Some(mark(2)));
        assert_eq!(own.messages.to_vec(), whole.messages.tail(2));
        assert_eq!(prefix_len(&own), 2);
        let prefix = StoredPrefix {
            epoch: Some("e1".into()),
            messages: whole.messages.to_vec()[..2].to_vec(),
        };
        assert_eq!(rebuild(own.clone(), prefix.clone()).unwrap(), whole);
        // Through its JSON form, as a store keeps it.
        let encoded = encode(&whole).unwrap();
        assert!(!encoded.head.contains("\"messages\""), "{}", encoded.head);
        let decoded = decode(&encoded.head, Some(&encoded.messages)).unwrap();
        assert_eq!(decoded, own);
        assert_eq!(rebuild(decoded, prefix).unwrap(), whole);
        // A whole checkpoint in one text reads as it is.
        let old = serde_json::to_string(&whole).unwrap();
        assert_eq!(decode(&old, None).unwrap(), whole);
    }

    #[test]
    fn a_checkpoint_without_a_usable_mark_is_kept_whole() {
        let whole = checkpoint(&["a", "b"], None);
        let (own, kept) = own_part(&whole);
        assert_eq!((own.clone(), kept), (whole.clone(), None));
        assert_eq!(rebuild(own, StoredPrefix::default()).unwrap(), whole);
        // A mark longer than the messages says nothing about them.
        let (own, kept) = own_part(&checkpoint(&["a"], Some(mark(3))));
        assert_eq!(kept, None);
        assert_eq!(own.messages.len(), 1);
        assert_eq!(prefix_len(&own), 0);
    }

    #[test]
    fn a_rewritten_or_shorter_history_fails_with_history_rewritten() {
        let (own, _) = own_part(&checkpoint(&["a", "b", "c"], Some(mark(2))));
        let rewritten = StoredPrefix {
            epoch: Some("e2".into()),
            messages: vec![Message::user("a"), Message::user("b")],
        };
        let shorter = StoredPrefix {
            epoch: Some("e1".into()),
            messages: vec![Message::user("a")],
        };
        for prefix in [rewritten, shorter, StoredPrefix::default()] {
            assert!(matches!(
                rebuild(own.clone(), prefix),
                Err(StoreError::HistoryRewritten { .. })
            ));
        }
    }
}
