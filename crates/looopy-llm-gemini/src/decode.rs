//! From Gemini answers to core types: [`GeminiDecoder`] reads a stream's
//! events (each a `GenerateContentResponse`) into [`LlmChunk`]s; a whole
//! answer is one event folded the same way.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use looopy_core::{FinishReason, LlmChunk, LlmError, Reasoning, Usage};

use crate::error::from_error;
use crate::wire::{GenerateResponse, LOCAL_ID_PREFIX, PROVIDER_NAME};

/// Ids for calls the model sent without one, unique within the process.
static NEXT_LOCAL_ID: AtomicU64 = AtomicU64::new(1);

/// Turns `GenerateContentResponse` events into [`LlmChunk`]s.
///
/// Gemini sends each function call whole, in one part: it becomes a
/// `ToolCallStart` and one `ToolCallDelta` with all its arguments. Usage
/// is cumulative (the last event's counts are the answer's); the finish
/// reason comes on the last candidate; both are sent when the stream ends.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder {
    calls: usize,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    model: Option<String>,
    /// Thought text since the last signature.
    thoughts: String,
}

impl GeminiDecoder {
    /// Adds one event, pushing what it means onto `out`.
    pub(crate) fn decode(
        &mut self,
        event: GenerateResponse,
        out: &mut VecDeque<LlmChunk>,
    ) -> Result<(), LlmError> {
        if let Some(error) = &event.error {
            let status = error
                .get("code")
                .and_then(serde_json::Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(500);
            return Err(from_error(status, Some(error), "", None));
        }
        if let Some(m) = event.model_version {
            self.model = Some(m);
        }
        if let Some(u) = event.usage_metadata {
            self.usage = Some(u.to_usage());
        }
        if let Some(reason) = event.prompt_feedback.and_then(|f| f.block_reason) {
            // The prompt itself was blocked: no candidate comes.
            if !reason.is_empty() && reason != "BLOCK_REASON_UNSPECIFIED" {
                self.finish = Some(FinishReason::ContentFilter);
            }
        }
        let Some(candidate) = event
            .candidates
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            if part.thought
                && let Some(text) = &part.text
            {
                self.thoughts.push_str(text);
            }
            // A signature is kept as a reasoning part (with the thoughts
            // before it), to go back with the model's turn.
            if let Some(sig) = part.thought_signature.filter(|s| !s.is_empty()) {
                let mut r = Reasoning::new(PROVIDER_NAME, std::mem::take(&mut self.thoughts));
                r.summary = true;
                r.signature = Some(sig);
                out.push_back(LlmChunk::ReasoningBlock(Box::new(r)));
            }
            if let Some(call) = part.function_call {
                let index = self.calls;
                self.calls += 1;
                let id = call.id.filter(|i| !i.is_empty()).unwrap_or_else(|| {
                    let n = NEXT_LOCAL_ID.fetch_add(1, Ordering::Relaxed);
                    format!("{LOCAL_ID_PREFIX}{n}")
                });
                out.push_back(LlmChunk::ToolCallStart {
                    index,
                    id,
                    name: call.name,
                });
                let args = call.args.unwrap_or_else(|| serde_json::json!({}));
                out.push_back(LlmChunk::ToolCallDelta {
                    index,
                    arguments: args.to_string(),
                });
                continue;
            }
            if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                out.push_back(if part.thought {
                    LlmChunk::ReasoningDelta(text)
                } else {
                    LlmChunk::TextDelta(text)
                });
            }
        }
        if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
            self.finish = Some(finish_reason(&reason));
        }
        Ok(())
    }

    /// The stream ended: pushes the usage and the finish chunk.
    pub(crate) fn finish(&mut self, out: &mut VecDeque<LlmChunk>) {
        if let Some(u) = self.usage {
            out.push_back(LlmChunk::Usage(u));
        }
        out.push_back(LlmChunk::Finish(self.finish_reason()));
    }

    /// The finish reason: Gemini says `STOP` after function calls too,
    /// which reads as `tool_calls`.
    pub(crate) fn finish_reason(&self) -> FinishReason {
        match &self.finish {
            Some(FinishReason::Stop) | None if self.calls > 0 => FinishReason::ToolCalls,
            Some(f) => f.clone(),
            None => FinishReason::Stop,
        }
    }

    /// Whether an event said why the model stopped (or that the prompt
    /// was blocked).
    pub(crate) fn finish_reason_seen(&self) -> bool {
        self.finish.is_some()
    }

    /// Usage, when the server sent it.
    pub(crate) fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// The model version the server named.
    pub(crate) fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
}

/// Gemini's `finishReason` as core's: the safety family is a content filter.
pub(crate) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        // Not one of Google's values, but mock servers send it.
        "FUNCTION_CALL" => FinishReason::ToolCalls,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_ascii_lowercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::{LlmResponse, ResponseAssembler};
    use serde_json::{Value, json};

    fn run(events: Vec<Value>) -> (Vec<LlmChunk>, LlmResponse, GeminiDecoder) {
        let mut d = GeminiDecoder::default();
        let mut out = VecDeque::new();
        for e in events {
            d.decode(serde_json::from_value(e).unwrap(), &mut out)
                .unwrap();
        }
        d.finish(&mut out);
        let out: Vec<LlmChunk> = out.into();
        let mut a = ResponseAssembler::new();
        out.iter().for_each(|c| a.push(c));
        (out, a.finish(), d)
    }

    #[test]
    fn text_thoughts_calls_and_usage_are_decoded() {
        let (chunks, r, d) = run(vec![
            json!({"candidates":[{"content":{"role":"model","parts":[
                {"text":"pondering","thought":true}]}}],
                "usageMetadata":{"promptTokenCount":10,"totalTokenCount":10},"modelVersion":"gemini-2.5-flash"}),
            json!({"candidates":[{"content":{"role":"model","parts":[
                {"text":"Let me check. "},
                {"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnLTE="},
                {"functionCall":{"id":"fc-2","name":"get_time","args":{}}}]},
                "finishReason":"STOP","index":0}],
                "usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":7,"thoughtsTokenCount":5,
                                 "cachedContentTokenCount":4,"totalTokenCount":22}}),
        ]);
        assert_eq!(r.reasoning.as_deref(), Some("pondering"));
        assert_eq!(r.message.text(), "Let me check. ");
        assert_eq!(r.message.tool_calls.len(), 2);
        assert!(r.message.tool_calls[0].id.starts_with(LOCAL_ID_PREFIX));
        assert_eq!(r.message.tool_calls[0].name, "get_weather");
        assert_eq!(r.message.tool_calls[0].arguments, r#"{"city":"Paris"}"#);
        assert_eq!(r.message.tool_calls[1].id, "fc-2");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls, "STOP after calls");
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 10,
                output_tokens: 12,
                total_tokens: 22,
                reasoning_tokens: 5,
                cached_input_tokens: 4,
                cache_creation_input_tokens: 0,
            })
        );
        assert_eq!(
            chunks.last(),
            Some(&LlmChunk::Finish(FinishReason::ToolCalls))
        );
        let signed: Vec<&Reasoning> = r.message.reasoning().collect();
        assert_eq!(signed.len(), 1);
        assert_eq!(signed[0].signature.as_deref(), Some("c2lnLTE="));
        assert_eq!(
            (signed[0].provider.as_str(), signed[0].text.as_str()),
            (PROVIDER_NAME, "pondering")
        );
        assert_eq!(d.model(), Some("gemini-2.5-flash"));
    }

    #[test]
    fn safety_blocks_are_a_content_filter() {
        let (_, r, _) = run(vec![json!({
            "promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},
            "usageMetadata":{"promptTokenCount":3,"totalTokenCount":3}})]);
        assert_eq!(r.finish_reason, FinishReason::ContentFilter);
        assert_eq!(r.message.text(), "");
        let (_, r, _) = run(vec![
            json!({"candidates":[{"content":{"parts":[{"text":"par"}]},
            "finishReason":"SAFETY"}]}),
        ]);
        assert_eq!(r.finish_reason, FinishReason::ContentFilter);
        let (_, r, _) = run(vec![json!({"candidates":[{"finishReason":"MAX_TOKENS"}]})]);
        assert_eq!(r.finish_reason, FinishReason::Length);
        assert_eq!(
            finish_reason("MALFORMED_FUNCTION_CALL"),
            FinishReason::Other("malformed_function_call".into())
        );
    }

    #[test]
    fn an_error_in_the_stream_is_typed() {
        let mut d = GeminiDecoder::default();
        let e = d
            .decode(
                serde_json::from_value(
                    json!({"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}),
                )
                .unwrap(),
                &mut VecDeque::new(),
            )
            .unwrap_err();
        assert!(matches!(e, LlmError::Overloaded { .. }), "{e:?}");
    }
}
