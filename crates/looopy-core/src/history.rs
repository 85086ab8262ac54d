//! [`History`]: the append-only message sequence a turn works on.
//!
//! A turn appends to its history every iteration and hands a snapshot of it to
//! the model provider and to the checkpoint store. Copying a `Vec<Message>`
//! each time would make an iteration cost O(n) in the length of the
//! conversation. `History` is a persistent vector of shared messages instead:
//! cloning it is O(1) and appending is amortised O(1), and a snapshot never
//! sees later appends.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::message::Message;

/// A cheaply clonable, append-only sequence of messages.
#[derive(Clone, Default, PartialEq)]
pub struct History {
    items: imbl::Vector<Arc<Message>>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Appends one message.
    pub fn push(&mut self, message: Message) {
        self.items.push_back(Arc::new(message));
    }

    /// Appends one shared message.
    pub fn push_shared(&mut self, message: Arc<Message>) {
        self.items.push_back(message);
    }

    /// Appends every message of `messages`.
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        for m in messages {
            self.push(m);
        }
    }

    /// Appends every shared message of `messages`.
    pub fn extend_shared(&mut self, messages: impl IntoIterator<Item = Arc<Message>>) {
        self.items.extend(messages);
    }

    /// The message at `index`.
    pub fn get(&self, index: usize) -> Option<&Message> {
        self.items.get(index).map(|m| &**m)
    }

    /// The last message.
    pub fn last(&self) -> Option<&Message> {
        self.items.back().map(|m| &**m)
    }

    /// The last message, shared.
    pub fn last_shared(&self) -> Option<&Arc<Message>> {
        self.items.back()
    }

    /// Iterates over the messages in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Message> + ExactSizeIterator + '_ {
        self.items.iter().map(|m| &**m)
    }

    /// Iterates over the shared messages from `start` on (clamped to the length).
    pub fn iter_from(&self, start: usize) -> impl Iterator<Item = &Arc<Message>> + '_ {
        let start = start.min(self.items.len());
        self.items.iter().skip(start)
    }

    /// The messages from `start` on, as an owned vector (clamped to the length).
    pub fn tail(&self, start: usize) -> Vec<Message> {
        self.iter_from(start).map(|m| (**m).clone()).collect()
    }

    /// The messages from `start` on, shared (clamped to the length): no
    /// message is copied.
    pub fn tail_shared(&self, start: usize) -> Vec<Arc<Message>> {
        self.iter_from(start).cloned().collect()
    }

    /// A copy of all messages.
    pub fn to_vec(&self) -> Vec<Message> {
        self.tail(0)
    }

    /// A history holding only messages `start..` (an O(log n) operation).
    pub fn skip(&self, start: usize) -> History {
        let start = start.min(self.items.len());
        History {
            items: self.items.clone().split_off(start),
        }
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        History {
            items: messages.into_iter().map(Arc::new).collect(),
        }
    }
}

impl FromIterator<Message> for History {
    fn from_iter<T: IntoIterator<Item = Message>>(iter: T) -> Self {
        History {
            items: iter.into_iter().map(Arc::new).collect(),
        }
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(History::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_does_not_see_later_appends() {
        let mut h = History::from(vec![Message::user("a")]);
        let snapshot = h.clone();
        h.push(Message::assistant("b"));
        assert_eq!(snapshot.len(), 1);
        assert_eq!(h.len(), 2);
        assert_eq!(h.last().unwrap().text(), "b");
        assert_eq!(h.tail(1).len(), 1);
        assert_eq!(h.skip(1).get(0).unwrap().text(), "b");
    }

    #[test]
    fn serializes_as_a_plain_array() {
        let h = History::from(vec![Message::user("a")]);
        let json = serde_json::to_value(&h).unwrap();
        assert!(json.is_array());
        let back: History = serde_json::from_value(json).unwrap();
        assert_eq!(back, h);
    }
}
