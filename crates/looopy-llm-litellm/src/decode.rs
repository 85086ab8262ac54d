//! From OpenAI answers to core types: [`ChunkDecoder`] turns streamed
//! `chat.completion.chunk`s into [`LlmChunk`]s, [`completion_to_response`]
//! turns a whole completion into an [`LlmResponse`].

use std::collections::VecDeque;

use looopy_core::{
    FinishReason, LlmChunk, LlmError, LlmResponse, Message, Part, Role, ToolCall, Usage,
};

use crate::error::from_stream_error;
use crate::wire::{ChatChunk, ChatCompletion, DeltaToolCall};

/// One tool call being streamed.
#[derive(Debug)]
struct CallState {
    /// The server's `index` for it.
    wire_index: Option<usize>,
    id: String,
    name: String,
}

/// Turns streamed chunks into [`LlmChunk`]s.
///
/// Tool calls get dense indexes in order of appearance. A server's index
/// names the call until a delta with that index brings a different id (some
/// servers send every call at index 0); deltas without an index continue the
/// call with their id, or the last call. Usage and the finish reason are held
/// back and sent at `[DONE]`, so that `Finish` is always the last chunk.
#[derive(Debug, Default)]
pub(crate) struct ChunkDecoder {
    calls: Vec<CallState>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    model: Option<String>,
}

impl ChunkDecoder {
    /// Adds one chunk, pushing what it means onto `out`.
    pub(crate) fn decode(
        &mut self,
        chunk: ChatChunk,
        out: &mut VecDeque<LlmChunk>,
    ) -> Result<(), LlmError> {
        if let Some(error) = &chunk.error {
            return Err(from_stream_error(error));
        }
        if self.model.is_none() {
            self.model = chunk.model;
        }
        if let Some(u) = &chunk.usage {
            self.usage = Some(u.to_usage());
        }
        // Only the first choice (requests never ask for n > 1).
        let Some(choice) = chunk
            .choices
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        if let Some(mut delta) = choice.delta {
            if let Some(r) = delta.take_reasoning() {
                out.push_back(LlmChunk::ReasoningDelta(r));
            }
            if let Some(t) = delta.content.take().filter(|t| !t.is_empty()) {
                out.push_back(LlmChunk::TextDelta(t));
            }
            if let Some(t) = delta.refusal.take().filter(|t| !t.is_empty()) {
                out.push_back(LlmChunk::TextDelta(t));
            }
            for call in delta.tool_calls.take().unwrap_or_default() {
                self.tool_call(call, out);
            }
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish = Some(FinishReason::from(reason.as_str()));
        }
        Ok(())
    }

    fn tool_call(&mut self, call: DeltaToolCall, out: &mut VecDeque<LlmChunk>) {
        let id = call.id.filter(|i| !i.is_empty());
        let index = self.resolve(call.index, id.as_deref());
        let state = &mut self.calls[index];
        let mut new_id = String::new();
        if let Some(id) = id
            && state.id.is_empty()
        {
            state.id.clone_from(&id);
            new_id = id;
        }
        let (name, arguments) = match call.function {
            Some(f) => (f.name.unwrap_or_default(), f.arguments.unwrap_or_default()),
            None => (String::new(), String::new()),
        };
        // Some servers repeat the whole name in every delta: only new text counts.
        let new_name = if name.is_empty() || state.name == name {
            String::new()
        } else {
            state.name.push_str(&name);
            name
        };
        if !new_id.is_empty() || !new_name.is_empty() {
            out.push_back(LlmChunk::ToolCallStart {
                index,
                id: new_id,
                name: new_name,
            });
        }
        if !arguments.is_empty() {
            out.push_back(LlmChunk::ToolCallDelta { index, arguments });
        }
    }

    /// Our index for a delta with the given server index and id.
    fn resolve(&mut self, wire_index: Option<usize>, id: Option<&str>) -> usize {
        let found = match wire_index {
            Some(w) => self.calls.iter().rposition(|c| c.wire_index == Some(w)),
            None => match id {
                Some(id) => self.calls.iter().position(|c| c.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        match found {
            Some(i)
                if id.is_none_or(|id| self.calls[i].id.is_empty() || self.calls[i].id == id) =>
            {
                i
            }
            _ => {
                self.calls.push(CallState {
                    wire_index,
                    id: String::new(),
                    name: String::new(),
                });
                self.calls.len() - 1
            }
        }
    }

    /// The stream ended with `[DONE]`: pushes the usage and the finish chunk.
    pub(crate) fn finish(&mut self, out: &mut VecDeque<LlmChunk>) {
        if let Some(u) = self.usage {
            out.push_back(LlmChunk::Usage(u));
        }
        out.push_back(LlmChunk::Finish(self.finish_reason()));
    }

    /// The finish reason: the server's, except that `stop` with tool calls
    /// reads as `tool_calls` (some servers say `stop` there).
    pub(crate) fn finish_reason(&self) -> FinishReason {
        normalize_finish(self.finish.clone(), !self.calls.is_empty())
    }

    /// Usage, when the server sent it.
    pub(crate) fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// The model the server named.
    pub(crate) fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
}

fn normalize_finish(reason: Option<FinishReason>, has_calls: bool) -> FinishReason {
    match reason {
        Some(FinishReason::Stop) | None if has_calls => FinishReason::ToolCalls,
        Some(r) => r,
        None => FinishReason::Stop,
    }
}

/// A whole completion as a response.
pub(crate) fn completion_to_response(c: ChatCompletion) -> Result<LlmResponse, LlmError> {
    if let Some(error) = &c.error {
        return Err(from_stream_error(error));
    }
    let Some(choice) = c.choices.into_iter().next() else {
        return Err(LlmError::MalformedResponse {
            message: "the completion has no choices".into(),
        });
    };
    let mut m = choice.message.unwrap_or_default();
    let reasoning = m.take_reasoning();
    let text = m
        .content
        .take()
        .filter(|t| !t.is_empty())
        .or_else(|| m.refusal.take().filter(|t| !t.is_empty()));
    let calls: Vec<ToolCall> = m
        .tool_calls
        .take()
        .unwrap_or_default()
        .into_iter()
        .map(|tc| {
            let (name, arguments) = match tc.function {
                Some(f) => (f.name.unwrap_or_default(), f.arguments.unwrap_or_default()),
                None => (String::new(), String::new()),
            };
            ToolCall::new(tc.id.unwrap_or_default(), name, arguments)
        })
        .collect();
    let finish_reason = normalize_finish(
        choice.finish_reason.as_deref().map(FinishReason::from),
        !calls.is_empty(),
    );
    let mut message =
        Message::with_parts(Role::Assistant, text.map(Part::text).into_iter().collect());
    message.tool_calls = calls;
    Ok(LlmResponse {
        message,
        finish_reason,
        usage: c.usage.as_ref().map(|u| u.to_usage()),
        reasoning,
        model: c.model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::ResponseAssembler;
    use serde_json::json;

    fn run(chunks: Vec<serde_json::Value>) -> (Vec<LlmChunk>, LlmResponse) {
        let mut d = ChunkDecoder::default();
        let mut out = VecDeque::new();
        for c in chunks {
            d.decode(serde_json::from_value(c).unwrap(), &mut out)
                .unwrap();
        }
        d.finish(&mut out);
        let out: Vec<LlmChunk> = out.into();
        let mut a = ResponseAssembler::new();
        out.iter().for_each(|c| a.push(c));
        (out, a.finish())
    }

    fn tc(
        index: Option<usize>,
        id: Option<&str>,
        name: Option<&str>,
        args: &str,
    ) -> serde_json::Value {
        json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index": index, "id": id, "type":"function", "function": {"name": name, "arguments": args}}]}}]})
    }

    #[test]
    fn interleaved_calls_are_reassembled_per_index() {
        let (chunks, r) = run(vec![
            tc(Some(0), Some("a"), Some("x"), ""),
            tc(Some(1), Some("b"), Some("y"), ""),
            tc(Some(1), None, None, "{\"q\":"),
            tc(Some(0), None, None, "{}"),
            tc(Some(1), None, None, "2}"),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        ]);
        assert_eq!(
            r.message.tool_calls,
            vec![
                ToolCall::new("a", "x", "{}"),
                ToolCall::new("b", "y", "{\"q\":2}")
            ]
        );
        assert_eq!(
            chunks.last(),
            Some(&LlmChunk::Finish(FinishReason::ToolCalls))
        );
    }

    #[test]
    fn repeated_names_and_ids_and_index_zero_reuse_are_handled() {
        let (_, r) = run(vec![
            tc(Some(0), Some("a"), Some("x"), "{\"n\""),
            tc(Some(0), Some("a"), Some("x"), ":1}"),
            tc(Some(0), Some("b"), Some("y"), "{}"),
            tc(None, None, None, ""),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
        ]);
        assert_eq!(
            r.message.tool_calls,
            vec![
                ToolCall::new("a", "x", "{\"n\":1}"),
                ToolCall::new("b", "y", "{}")
            ]
        );
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    }

    #[test]
    fn usage_comes_before_finish_in_both_shapes() {
        for last in [
            json!({"choices":[], "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}),
            json!({"choices":[{"index":0,"delta":{}}], "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}),
        ] {
            let (chunks, r) = run(vec![
                json!({"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"hm"}}]}),
                json!({"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}),
                last,
            ]);
            assert_eq!(r.message.text(), "hi");
            assert_eq!(r.reasoning.as_deref(), Some("hm"));
            assert_eq!(r.usage.unwrap().total_tokens, 5);
            assert!(matches!(chunks[chunks.len() - 2], LlmChunk::Usage(_)));
            assert_eq!(chunks.last(), Some(&LlmChunk::Finish(FinishReason::Stop)));
        }
    }

    #[test]
    fn error_objects_in_the_stream_become_errors() {
        let mut d = ChunkDecoder::default();
        let c =
            serde_json::from_value(json!({"error":{"message":"overloaded","code":503}})).unwrap();
        let e = d.decode(c, &mut VecDeque::new()).unwrap_err();
        assert!(
            matches!(e, LlmError::Server { retry_after: None, status: 503, message } if message == "overloaded")
        );
    }

    #[test]
    fn completions_map_to_responses() {
        let c: ChatCompletion = serde_json::from_value(json!({
            "model": "m-1",
            "choices": [{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
                "reasoning":"because",
                "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}],
            "usage": {"prompt_tokens":1,"completion_tokens":2}
        }))
        .unwrap();
        let r = completion_to_response(c).unwrap();
        assert_eq!(r.message.tool_calls, vec![ToolCall::new("c1", "f", "{}")]);
        assert!(r.message.parts.is_empty());
        assert_eq!(r.reasoning.as_deref(), Some("because"));
        assert_eq!(r.model.as_deref(), Some("m-1"));
        assert_eq!(r.usage.unwrap().total_tokens, 3);
        let empty: ChatCompletion = serde_json::from_value(json!({"choices":[]})).unwrap();
        assert!(matches!(
            completion_to_response(empty),
            Err(LlmError::MalformedResponse { .. })
        ));
    }
}
