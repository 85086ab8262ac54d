//! Server-sent events, read as the model's stream needs them: the `data` of
//! each event, whole, as bytes.
//!
//! The parser is fed the response body's bytes as they arrive and keeps
//! the data of the events they complete in one buffer that it reuses, so
//! an event costs no allocation and no pass beyond finding its line ends.
//! Every provider's stream is read with it (chat completions, Responses,
//! Anthropic, Gemini). It replaced `eventsource-stream` on these paths (the
//! A2A client still uses that crate), whose parser combinators allocate a
//! `String` per field, on every event of every model call. `sse-stream`,
//! the other crate in the tree, refuses lines the standard says to ignore
//! (an unknown field, a repeated `id`), and a model stream must not fail on
//! those.
//!
//! It follows the WHATWG event stream rules that matter to the reader of
//! one response: lines end in LF, CR or CRLF; a byte order mark before the
//! first line is dropped; a line starting with `:` is a comment; a line
//! without `:` is a field with an empty value; one space after the `:` is
//! dropped; the values of `data` lines join with LF; `event`, `id`,
//! `retry` and unknown fields are ignored (one request, one reader: no
//! reconnection); an empty line ends the event, which is handed out when
//! it had a `data` line. An event the stream ends in the middle of is
//! dropped.

use std::collections::VecDeque;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An incremental event stream parser (see the module docs).
#[derive(Debug, Default)]
pub struct SseParser {
    /// The end of a line that the last chunk cut.
    line: Vec<u8>,
    /// The data of completed events, then of the event being read.
    data: Vec<u8>,
    /// Where each completed event's data ends in `data`.
    ends: VecDeque<usize>,
    /// Where the next completed event's data starts in `data`.
    read: usize,
    /// Where the event being read starts in `data`.
    open: usize,
    /// The last chunk ended in CR: an LF starting the next belongs to it.
    after_cr: bool,
    /// A line was read (the byte order mark can only come before one).
    started: bool,
}

impl SseParser {
    /// Reads `bytes`, the next piece of the stream.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if self.ends.is_empty() && self.read > 0 {
            // Every completed event was taken: reuse the buffer.
            self.data.drain(..self.read);
            self.open -= self.read;
            self.read = 0;
        }
        if std::mem::take(&mut self.after_cr) && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        while let Some(at) = memchr::memchr2(b'\n', b'\r', bytes) {
            if self.line.is_empty() {
                self.take_line(&bytes[..at]);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..at]);
                self.take_line(&line);
                line.clear();
                self.line = line;
            }
            let rest = &bytes[at + 1..];
            bytes = match (bytes[at], rest.first()) {
                (b'\r', Some(b'\n')) => &rest[1..],
                (b'\r', None) => {
                    self.after_cr = true;
                    rest
                }
                _ => rest,
            };
        }
        self.line.extend_from_slice(bytes);
    }

    /// The data of the next completed event, oldest first.
    pub fn next_event(&mut self) -> Option<&[u8]> {
        let end = self.ends.pop_front()?;
        let start = std::mem::replace(&mut self.read, end);
        Some(&self.data[start..end])
    }

    fn take_line(&mut self, mut line: &[u8]) {
        if !std::mem::replace(&mut self.started, true) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            if self.data.len() > self.open {
                // Each data line added an LF; the last one is not data.
                self.data.pop();
                self.ends.push_back(self.data.len());
            }
            self.open = self.data.len();
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(0) => return, // a comment
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        if field == b"data" {
            self.data.extend_from_slice(value);
            self.data.push(b'\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(parser: &mut SseParser) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(data) = parser.next_event() {
            out.push(String::from_utf8_lossy(data).into_owned());
        }
        out
    }

    fn parse_whole(stream: &[u8]) -> Vec<String> {
        let mut parser = SseParser::default();
        parser.feed(stream);
        events(&mut parser)
    }

    #[test]
    fn events_end_at_an_empty_line_whatever_the_line_endings() {
        let stream = b"data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n";
        assert_eq!(parse_whole(stream), ["a", "b", "c"], "d is not ended");
    }

    #[test]
    fn data_lines_join_and_other_lines_are_read_as_the_standard_says() {
        let stream = "\u{feff}: a comment\nevent: delta\nid: 1\nid: 2\nretry: x\nx-unknown: y\n\
                      data:first\ndata:  two spaces\ndata\n\n\
                      event: no-data\n\n\
                      data:\n\n";
        assert_eq!(
            parse_whole(stream.as_bytes()),
            ["first\n two spaces\n", ""],
            "one space dropped, a bare `data` adds an empty line, an event without data is skipped"
        );
    }

    #[test]
    fn a_stream_cut_anywhere_reads_the_same() {
        let stream = "\u{feff}data: {\"a\":1}\r\n\r\n: ping\n\ndata: é\rdata: ✓\r\r\
                      data: [DONE]\n\n"
            .as_bytes();
        let whole = parse_whole(stream);
        assert_eq!(whole, ["{\"a\":1}", "é\n✓", "[DONE]"]);
        for cut in 0..=stream.len() {
            let mut parser = SseParser::default();
            parser.feed(&stream[..cut]);
            let mut got = events(&mut parser);
            parser.feed(&stream[cut..]);
            got.extend(events(&mut parser));
            assert_eq!(got, whole, "cut at {cut}");
        }
        let mut parser = SseParser::default();
        let mut got = Vec::new();
        for byte in stream {
            parser.feed(std::slice::from_ref(byte));
            got.extend(events(&mut parser));
        }
        assert_eq!(got, whole, "one byte at a time");
    }

    #[test]
    fn the_buffer_is_reused_once_its_events_are_taken() {
        let mut parser = SseParser::default();
        for i in 0..100 {
            parser.feed(format!("data: event {i}\n\n").as_bytes());
            assert_eq!(events(&mut parser), [format!("event {i}")]);
        }
        assert!(parser.data.len() < 16, "{} bytes kept", parser.data.len());
    }
}
