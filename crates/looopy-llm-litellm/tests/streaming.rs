//! Streamed calls (server-sent events) against the in-process fixture server.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use looopy_core::{FinishReason, LlmChunk, LlmError, LlmProvider, ToolCall, Usage};
use looopy_llm_litellm::LiteLlmProvider;
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture, SseEnd, SseEvent, SseReply};
use serde_json::json;
use support::{ask, assemble, cx, drain, provider};

#[tokio::test]
async fn text_stream_with_reasoning_and_usage() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::sse(vec![
        openai::chunk(json!({"role": "assistant", "content": ""}), None),
        openai::reasoning_chunk("Think"),
        openai::chunk(json!({"reasoning": "ing."}), None),
        openai::text_chunk("Hel"),
        openai::text_chunk("lo"),
        openai::finish_chunk("stop"),
        openai::usage_chunk(12, 3),
    ]));
    let llm = provider(&f);
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("hi"), &cx)).await;
    assert_eq!(err, None);
    assert_eq!(
        chunks,
        vec![
            LlmChunk::ReasoningDelta("Think".into()),
            LlmChunk::ReasoningDelta("ing.".into()),
            LlmChunk::TextDelta("Hel".into()),
            LlmChunk::TextDelta("lo".into()),
            LlmChunk::Usage(Usage {
                input_tokens: 12,
                output_tokens: 3,
                total_tokens: 15,
                ..Default::default()
            }),
            LlmChunk::Finish(FinishReason::Stop),
        ]
    );
    let req = f.last_request().unwrap();
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(req.header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn usage_chunk_with_an_empty_delta_is_accepted() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::sse(vec![
        openai::text_chunk("ok"),
        openai::finish_chunk("length"),
        openai::usage_chunk_with_empty_delta(5, 1),
    ]));
    let (chunks, err) = stream_from(&f, "hi").await;
    assert_eq!(err, None);
    let r = assemble(&chunks);
    assert_eq!(r.message.text(), "ok");
    assert_eq!(r.finish_reason, FinishReason::Length);
    assert_eq!(r.usage.map(|u| u.total_tokens), Some(6));
}

#[tokio::test]
async fn several_tool_calls_streamed_interleaved() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::Sse(
        SseReply::new(vec![
            openai::text_chunk("Let me check."),
            openai::tool_call_start_chunk(0, "call_a", "weather"),
            openai::tool_call_start_chunk(1, "call_b", "time"),
            openai::tool_args_chunk(0, "{\"city\":"),
            openai::tool_args_chunk(1, "{\"tz\":\"UTC\"}"),
            openai::tool_args_chunk(0, "\"Paris\"}"),
            openai::tool_call_start_chunk(2, "call_c", "noop"),
            openai::finish_chunk("tool_calls"),
            openai::usage_chunk(1, 2),
        ])
        .interval(Duration::from_millis(5)),
    ));
    let (chunks, err) = stream_from(&f, "weather and time").await;
    assert_eq!(err, None);
    let r = assemble(&chunks);
    assert_eq!(r.message.text(), "Let me check.");
    assert_eq!(
        r.message.tool_calls,
        vec![
            ToolCall::new("call_a", "weather", "{\"city\":\"Paris\"}"),
            ToolCall::new("call_b", "time", "{\"tz\":\"UTC\"}"),
            ToolCall::new("call_c", "noop", ""),
        ]
    );
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        chunks.last(),
        Some(&LlmChunk::Finish(FinishReason::ToolCalls))
    );
}

/// What the provider streams for `ask(question)` as the fixture `f` plays
/// its next reply: the chunks, and the error that ended the stream.
async fn stream_from(f: &OpenAiFixture, question: &str) -> (Vec<LlmChunk>, Option<LlmError>) {
    let cx = cx();
    drain(provider(f).stream(ask(question), &cx)).await
}

/// What the provider streams when the server answers with these SSE
/// events, written as they are.
async fn stream_events(events: Vec<SseEvent>) -> (Vec<LlmChunk>, Option<LlmError>) {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::Sse(SseReply::from_events(events)));
    stream_from(&f, "a").await
}

/// A stream of these chunks, one every 20 ms (long enough to be cut short).
fn slowly(chunks: Vec<serde_json::Value>) -> FixtureReply {
    SseReply::new(chunks)
        .interval(Duration::from_millis(20))
        .into()
}

/// The stream failed as malformed, quoting `quoted` in its message.
fn assert_malformed(err: &Option<LlmError>, quoted: &str) {
    assert!(
        matches!(err, Some(LlmError::MalformedResponse { message }) if message.contains(quoted)),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_stream_cut_before_done_is_malformed() {
    let f = OpenAiFixture::start().await.unwrap();
    // A clean close, then an aborted connection, both before `[DONE]`.
    for end in [SseEnd::Close, SseEnd::Abort] {
        f.push(
            SseReply::new(vec![openai::text_chunk("partial")])
                .end(end)
                .into(),
        );
    }
    let llm = provider(&f);
    let cx = cx();
    for _ in 0..2 {
        let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
        assert_eq!(chunks, vec![LlmChunk::TextDelta("partial".into())]);
        assert_malformed(&err, "[DONE]");
    }
}

#[tokio::test]
async fn garbage_chunks_are_malformed_and_quoted() {
    let (chunks, err) = stream_events(vec![
        SseEvent::Json(openai::text_chunk("a")),
        SseEvent::Data("{not json at all".into()),
    ])
    .await;
    assert_eq!(chunks, vec![LlmChunk::TextDelta("a".into())]);
    assert_malformed(&err, "{not json at all");
}

#[tokio::test]
async fn a_chunk_that_is_not_utf8_is_malformed_and_says_so() {
    let (chunks, err) = stream_events(vec![
        SseEvent::Json(openai::text_chunk("a")),
        SseEvent::Bytes(b"data: {\"choices\": \"\xff\xfe\"}\n\n".to_vec()),
    ])
    .await;
    assert_eq!(chunks, vec![LlmChunk::TextDelta("a".into())]);
    assert_malformed(&err, "not UTF-8");
}

#[tokio::test]
async fn comments_and_keepalives_are_ignored() {
    let (chunks, err) = stream_events(vec![
        SseEvent::Verbatim(": keep-alive\n\n".into()),
        SseEvent::Json(openai::text_chunk("x")),
        SseEvent::Verbatim("event: ping\ndata: \n\n".into()),
        SseEvent::Json(openai::finish_chunk("stop")),
    ])
    .await;
    assert_eq!(err, None);
    assert_eq!(
        chunks,
        vec![
            LlmChunk::TextDelta("x".into()),
            LlmChunk::Finish(FinishReason::Stop)
        ]
    );
}

#[tokio::test]
async fn errors_before_and_inside_the_stream() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(401, "bad key for stream"))
        .push(FixtureReply::sse(vec![
            openai::text_chunk("a"),
            json!({"error": {"message": "model overloaded", "code": 503}}),
        ]));
    let llm = provider(&f);
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert!(chunks.is_empty());
    assert_eq!(
        err,
        Some(LlmError::Authentication {
            message: "bad key for stream".into()
        })
    );
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(
        err,
        Some(LlmError::Server {
            retry_after: None,
            status: 503,
            message: "model overloaded".into()
        })
    );
}

#[tokio::test]
async fn a_json_answer_to_a_stream_request_is_streamed() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion("whole")));
    let (chunks, err) = stream_from(&f, "a").await;
    assert_eq!(err, None);
    assert_eq!(assemble(&chunks).message.text(), "whole");
}

#[tokio::test]
async fn idle_gap_times_out() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::Sse(SseReply::from_events(vec![
        SseEvent::Json(openai::text_chunk("a")),
        SseEvent::Pause(Duration::from_secs(30)),
        SseEvent::Json(openai::text_chunk("b")),
    ])));
    let llm = LiteLlmProvider::new(
        support::config(&f).with_stream_idle_timeout(Duration::from_millis(200)),
    )
    .unwrap();
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert_eq!(chunks, vec![LlmChunk::TextDelta("a".into())]);
    assert!(
        matches!(&err, Some(LlmError::Timeout { message }) if message.contains("idle")),
        "{err:?}"
    );
    assert!(f.wait_for_aborted(1, Duration::from_secs(10)).await);
}

#[tokio::test]
async fn the_idle_limit_counts_from_the_last_event() {
    // Each gap is under the idle limit, the whole stream well over it: the
    // limit restarts with every event.
    let f = OpenAiFixture::start().await.unwrap();
    let mut chunks: Vec<_> = (0..10).map(|_| openai::text_chunk("t")).collect();
    chunks.push(openai::finish_chunk("stop"));
    f.push(
        SseReply::new(chunks)
            .interval(Duration::from_millis(60))
            .into(),
    );
    let llm = LiteLlmProvider::new(
        support::config(&f).with_stream_idle_timeout(Duration::from_millis(250)),
    )
    .unwrap();
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert_eq!(err, None);
    assert_eq!(assemble(&chunks).message.text(), "tttttttttt");
}

#[tokio::test]
async fn dropping_the_stream_aborts_the_request() {
    let f = OpenAiFixture::start().await.unwrap();
    let many: Vec<_> = (0..500)
        .map(|i| openai::text_chunk(&format!("t{i} ")))
        .collect();
    f.push(slowly(many));
    let llm = provider(&f);
    let cx = cx();
    let mut stream = llm.stream(ask("a long story"), &cx);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first, LlmChunk::TextDelta("t0 ".into()));
    assert_eq!(f.aborted(), 0);
    drop(stream);
    assert!(
        f.wait_for_aborted(1, Duration::from_secs(10)).await,
        "the server saw the connection close"
    );
}

#[tokio::test]
async fn cancelling_the_turn_ends_the_stream() {
    let f = OpenAiFixture::start().await.unwrap();
    let many: Vec<_> = (0..500).map(|_| openai::text_chunk("t")).collect();
    f.push(slowly(many));
    let llm = provider(&f);
    let cx = cx();
    let mut stream = llm.stream(ask("a"), &cx);
    assert!(stream.next().await.unwrap().is_ok());
    cx.cancel.cancel();
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    assert_eq!(last, Some(Err(LlmError::Cancelled)));
    drop(stream);
    assert!(f.wait_for_aborted(1, Duration::from_secs(10)).await);
}

#[tokio::test]
async fn the_whole_request_limit_covers_the_stream() {
    let f = OpenAiFixture::start().await.unwrap();
    let many: Vec<_> = (0..500).map(|_| openai::text_chunk("t")).collect();
    f.push(slowly(many));
    let llm =
        LiteLlmProvider::new(support::config(&f).with_request_timeout(Duration::from_millis(300)))
            .unwrap();
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert!(!chunks.is_empty() && chunks.len() < 500);
    assert!(
        matches!(&err, Some(LlmError::Timeout { message }) if message.contains("did not finish")),
        "{err:?}"
    );
}
