//! A small JSON writer for the stream items written on every event
//! (`v1_stream`): objects with static keys, strings, and serde for the
//! rest.
//!
//! Through serde_json, a stream item cost about 5,000 instructions: every
//! key and string went through its escaping loop (a table lookup per
//! byte) and every field through the generic map machinery. Here a static
//! key is copied as it is, and a string is checked for the bytes JSON
//! escapes (`"`, `\` and the control characters, the same set as
//! serde_json's) in one pass that the compiler vectorises; only a string
//! that has one goes through serde_json. Numbers, enums and free-form
//! values (metadata, data parts) are still written by serde_json, so the
//! text is the one serde_json writes.

use serde::Serialize;

/// Whether serde_json writes `s` with an escape.
fn needs_escape(s: &str) -> bool {
    // No early exit: a fold over every byte vectorises, and the strings
    // here (ids, chunks of text) are short.
    s.bytes().fold(false, |any, b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// Writes `s` as a JSON string.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s) {
        value(out, s);
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Writes `v` with serde_json (writing into a `Vec` fails only for
/// serializers that report errors of their own, which none here has;
/// `null` keeps the item valid JSON if one did).
pub(crate) fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, v).is_err() {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

/// A JSON object being written: `{` when opened, a `,` before every field
/// but the first, `}` at [`end`](Object::end).
pub(crate) struct Object<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Object<'a> {
    /// Opens an object at the end of `out`.
    pub(crate) fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { out, empty: true }
    }

    /// Writes `"key":` and hands out the buffer for the field's value.
    /// `key` is one of this crate's field names: no byte in it needs an
    /// escape.
    pub(crate) fn key(&mut self, key: &'static str) -> &mut Vec<u8> {
        debug_assert!(!needs_escape(key));
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// A string field.
    pub(crate) fn string(&mut self, key: &'static str, s: &str) {
        string(self.key(key), s);
    }

    /// A boolean field.
    pub(crate) fn bool(&mut self, key: &'static str, b: bool) {
        let text: &[u8] = if b { b"true" } else { b"false" };
        self.key(key).extend_from_slice(text);
    }

    /// A field written by serde_json.
    pub(crate) fn value<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) {
        value(self.key(key), v);
    }

    /// Closes the object.
    pub(crate) fn end(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_the_ones_serde_json_writes() {
        let mut every_byte = String::new();
        for c in (0u8..0x80).map(char::from) {
            every_byte.push(c);
            every_byte.push('x');
        }
        for s in [
            "",
            "plain",
            "019a-uuid-like-0000",
            "It is \"sunny\"\n",
            "back\\slash",
            "tab\tand\u{1}control",
            "é, 中文, 🦀 and \u{7f}",
            every_byte.as_str(),
        ] {
            let mut out = Vec::new();
            string(&mut out, s);
            assert_eq!(out, serde_json::to_vec(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn an_object_separates_its_fields_and_nests() {
        let mut out = Vec::new();
        let mut o = Object::open(&mut out);
        o.string("a", "x\"y");
        o.bool("b", true);
        o.value("n", &[1, 2]);
        let inner = o.key("o");
        let mut i = Object::open(inner);
        i.bool("f", false);
        i.end();
        o.end();
        Object::open(&mut out).end();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":"x\"y","b":true,"n":[1,2],"o":{"f":false}}{}"#
        );
    }
}
