//! `RetryingLlm` around the HTTP provider (against the fixture server) and
//! around another provider (the scripted one).

use crate::support;

use std::time::Duration;

use looopy_core::{LlmChunk, LlmError, LlmProvider, LlmResponse};
use looopy_loop::layers::{RetryPolicy, RetryingLlm};
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{
    FixtureReply, OpenAiFixture, ScriptStep, ScriptedLlm, SseEnd, SseEvent, SseReply,
};
use serde_json::json;
use support::{ask, assemble, cx, drain, provider};

/// A policy whose own backoff is far longer than any test: a test that
/// finishes quickly waited for the server's `Retry-After`, not for it.
fn slow_backoff() -> RetryPolicy {
    RetryPolicy::default().with_delays(Duration::from_secs(600), Duration::from_secs(1200))
}

fn fast_backoff() -> RetryPolicy {
    RetryPolicy::default().with_delays(Duration::from_millis(10), Duration::from_millis(50))
}

/// Fails the test instead of hanging when a wait was not what it should be.
async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the call should not wait for the policy's own (ten-minute) backoff")
}

#[tokio::test]
async fn retries_503_then_succeeds() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(503, "busy"))
        .push(FixtureReply::error(502, "bad gateway"))
        .push(FixtureReply::json(openai::completion("finally")));
    let llm = RetryingLlm::new(provider(&f), fast_backoff());
    let r = llm.call(ask("a"), &cx()).await.unwrap();
    assert_eq!(r.message.text(), "finally");
    assert_eq!(f.requests().len(), 3);
    // Every attempt sends the same body.
    let bodies: Vec<_> = f.requests().into_iter().map(|r| r.body).collect();
    assert!(bodies.windows(2).all(|w| w[0] == w[1]));
}

#[tokio::test]
async fn retry_after_seconds_and_http_dates_are_honoured() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(429, "slow down").with_header("retry-after", "1"))
        .push(
            FixtureReply::error(429, "slow down")
                .with_header("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT"),
        )
        .push(FixtureReply::json(openai::completion("ok")));
    let llm = RetryingLlm::new(provider(&f), slow_backoff());
    let r = within(llm.call(ask("a"), &cx())).await.unwrap();
    assert_eq!(r.message.text(), "ok");
    assert_eq!(f.requests().len(), 3);
}

#[tokio::test]
async fn a_503_with_retry_after_waits_as_asked() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(503, "overloaded").with_header("retry-after", "1"))
        .push(FixtureReply::json(openai::completion("ok")));
    let llm = RetryingLlm::new(provider(&f), slow_backoff());
    let started = std::time::Instant::now();
    let r = within(llm.call(ask("a"), &cx())).await.unwrap();
    assert_eq!(r.message.text(), "ok");
    assert_eq!(f.requests().len(), 2);
    // It waited for the server's second, not less (the policy's own draw
    // could be anything from zero to ten minutes).
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn retry_after_beyond_the_cap_gives_up_at_once() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(429, "quota exhausted").with_header("retry-after", "86400"));
    let llm = RetryingLlm::new(provider(&f), RetryPolicy::default());
    let e = within(llm.call(ask("a"), &cx())).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::RateLimited {
            message: "quota exhausted".into(),
            retry_after: Some(Duration::from_secs(86400))
        }
    );
    assert_eq!(f.requests().len(), 1);
}

#[tokio::test]
async fn gives_up_after_max_retries_and_never_retries_client_errors() {
    let f = OpenAiFixture::start().await.unwrap();
    for _ in 0..3 {
        f.push(FixtureReply::error(500, "down"));
    }
    f.push(FixtureReply::error(400, "bad"))
        .push(FixtureReply::error(401, "who?"));
    let llm = RetryingLlm::new(provider(&f), fast_backoff().with_max_retries(2));
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::Server {
            retry_after: None,
            status: 500,
            message: "gave up after 3 attempts (all 2 retries used); last: down".into()
        }
    );
    assert_eq!(f.requests().len(), 3, "one attempt and two retries");
    assert!(matches!(
        llm.call(ask("a"), &cx()).await,
        Err(LlmError::BadRequest { .. })
    ));
    assert!(matches!(
        llm.call(ask("a"), &cx()).await,
        Err(LlmError::Authentication { .. })
    ));
    assert_eq!(f.requests().len(), 5);
}

#[tokio::test]
async fn stream_is_retried_before_its_first_chunk() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(429, "warming up").with_header("retry-after", "0"))
        .push(FixtureReply::sse(vec![
            openai::text_chunk("hi"),
            openai::finish_chunk("stop"),
        ]));
    let llm = RetryingLlm::new(provider(&f), slow_backoff());
    let cx = cx();
    let (chunks, err) = within(drain(llm.stream(ask("a"), &cx))).await;
    assert_eq!(err, None);
    assert_eq!(assemble(&chunks).message.text(), "hi");
    assert_eq!(f.requests().len(), 2);
}

#[tokio::test]
async fn stream_is_not_retried_after_its_first_chunk() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::sse(vec![
        openai::text_chunk("half"),
        json!({"error": {"message": "overloaded", "code": 503}}),
    ]))
    .push(FixtureReply::sse(vec![openai::text_chunk("never")]));
    let llm = RetryingLlm::new(provider(&f), fast_backoff());
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert_eq!(chunks, vec![LlmChunk::TextDelta("half".into())]);
    assert_eq!(
        err,
        Some(LlmError::Server {
            retry_after: None,
            status: 503,
            message: "gave up after 1 attempt (not retried: the stream had already \
                      forwarded chunks); last: overloaded"
                .into()
        })
    );
    assert_eq!(f.requests().len(), 1);
}

#[tokio::test]
async fn a_client_error_after_retries_names_the_attempts() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(503, "busy"))
        .push(FixtureReply::error(400, "bad"))
        .push(FixtureReply::json(openai::completion("unused")));
    let llm = RetryingLlm::new(provider(&f), fast_backoff());
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::BadRequest {
            message: "gave up after 2 attempts (this error is not retried); last: bad".into()
        }
    );
    assert_eq!(e.kind(), "bad_request");
    assert_eq!(f.requests().len(), 2);
}

// ------------------------------------------------ malformed responses

#[tokio::test]
async fn a_malformed_body_is_retried() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::raw(200, "garbage"))
        .push(FixtureReply::json(openai::completion("fine")));
    let llm = RetryingLlm::new(provider(&f), fast_backoff());
    let r = llm.call(ask("a"), &cx()).await.unwrap();
    assert_eq!(r.message.text(), "fine");
    assert_eq!(f.requests().len(), 2);
    assert_eq!(f.served(), 2);
}

#[tokio::test]
async fn a_completion_without_choices_is_retried() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(
        json!({"id": "x", "object": "chat.completion", "model": "test-model", "choices": []}),
    ))
    .push(FixtureReply::json(openai::completion("fine")));
    let llm = RetryingLlm::new(provider(&f), fast_backoff());
    let r = llm.call(ask("a"), &cx()).await.unwrap();
    assert_eq!(r.message.text(), "fine");
    assert_eq!(f.requests().len(), 2);
}

#[tokio::test]
async fn always_malformed_gives_up_naming_the_attempts_and_the_cause() {
    let f = OpenAiFixture::start().await.unwrap();
    for _ in 0..3 {
        f.push(FixtureReply::raw(200, "garbage"));
    }
    f.push(FixtureReply::json(openai::completion("never reached")));
    let llm = RetryingLlm::new(provider(&f), fast_backoff().with_max_retries(2));
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert_eq!(e.kind(), "malformed_response", "{e:?}");
    let LlmError::MalformedResponse { message } = &e else {
        panic!("{e:?}");
    };
    assert!(
        message.starts_with("gave up after 3 attempts (all 2 retries used); last: "),
        "{message}"
    );
    assert!(message.contains("invalid completion JSON"), "{message}");
    assert!(message.contains("garbage"), "{message}");
    assert!(
        e.to_string()
            .starts_with("malformed response: gave up after 3 attempts"),
        "{e}"
    );
    assert_eq!(f.requests().len(), 3, "max_retries + 1 attempts");
}

#[tokio::test]
async fn the_last_cause_is_the_last_attempts() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::raw(200, "garbage"))
        .push(FixtureReply::raw(200, "{\"choices\": \"no\"}"))
        .push(FixtureReply::error(502, "bad gateway"));
    let llm = RetryingLlm::new(provider(&f), fast_backoff().with_max_retries(2));
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::Server {
            status: 502,
            retry_after: None,
            message: "gave up after 3 attempts (all 2 retries used); last: bad gateway".into()
        }
    );
    assert_eq!(f.requests().len(), 3);
}

#[tokio::test]
async fn malformed_responses_can_be_left_unretried() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::raw(200, "garbage"))
        .push(FixtureReply::json(openai::completion("unused")));
    let policy = RetryPolicy {
        retry_malformed_responses: false,
        ..fast_backoff()
    };
    let llm = RetryingLlm::new(provider(&f), policy);
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    let LlmError::MalformedResponse { message } = &e else {
        panic!("{e:?}");
    };
    assert!(message.starts_with("invalid completion JSON"), "{message}");
    assert_eq!(f.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_that_ends_or_is_cut_before_its_first_chunk_is_retried() {
    let f = OpenAiFixture::start().await.unwrap();
    // Closed before [DONE], with nothing but a role delta (no chunk for
    // the caller); then cut with nothing at all; then a malformed event.
    f.push(FixtureReply::Sse(
        SseReply::new(vec![openai::chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )])
        .end(SseEnd::Close),
    ))
    .push(FixtureReply::Sse(SseReply::new(vec![]).end(SseEnd::Abort)))
    .push(FixtureReply::Sse(SseReply::from_events(vec![
        SseEvent::Data("{not json".into()),
    ])))
    .push(FixtureReply::sse(vec![
        openai::text_chunk("whole"),
        openai::finish_chunk("stop"),
    ]));
    let llm = RetryingLlm::new(provider(&f), fast_backoff());
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert_eq!(err, None);
    assert_eq!(assemble(&chunks).message.text(), "whole");
    assert_eq!(f.requests().len(), 4);
}

#[tokio::test]
async fn a_streamed_malformed_body_uses_the_same_budget() {
    let f = OpenAiFixture::start().await.unwrap();
    for _ in 0..2 {
        f.push(FixtureReply::Sse(SseReply::new(vec![]).end(SseEnd::Close)));
    }
    f.push(FixtureReply::sse(vec![openai::text_chunk("never")]));
    let llm = RetryingLlm::new(provider(&f), fast_backoff().with_max_retries(1));
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert!(chunks.is_empty());
    let Some(LlmError::MalformedResponse { message }) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        message,
        "gave up after 2 attempts (all 1 retries used); last: the stream ended before [DONE]"
    );
    assert_eq!(f.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_after_chunks_were_forwarded_is_not_retried() {
    for end in [SseEnd::Abort, SseEnd::Close] {
        let f = OpenAiFixture::start().await.unwrap();
        f.push(FixtureReply::Sse(
            SseReply::new(vec![openai::text_chunk("half")]).end(end),
        ))
        .push(FixtureReply::sse(vec![openai::text_chunk("never")]));
        let llm = RetryingLlm::new(provider(&f), fast_backoff());
        let cx = cx();
        let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
        assert_eq!(chunks, vec![LlmChunk::TextDelta("half".into())]);
        let err = err.expect("the cut stream ends with an error");
        assert!(
            err.to_string().contains(
                "gave up after 1 attempt (not retried: the stream had already forwarded chunks); last: "
            ),
            "{end:?}: {err}"
        );
        assert!(
            matches!(
                err,
                LlmError::MalformedResponse { .. } | LlmError::Connection { .. }
            ),
            "{end:?}: {err:?}"
        );
        assert_eq!(f.requests().len(), 1, "{end:?}");
    }
}

#[tokio::test]
async fn connection_errors_are_retried() {
    // Nothing listens on the port of a dropped fixture.
    let f = OpenAiFixture::start().await.unwrap();
    let config = support::config(&f);
    drop(f);
    let llm = RetryingLlm::new(
        looopy_llm_litellm::LiteLlmProvider::new(config).unwrap(),
        fast_backoff().with_max_retries(2),
    );
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert!(matches!(e, LlmError::Connection { .. }), "{e:?}");
}

// ------------------------------------------------ around any provider

fn server_error() -> LlmError {
    LlmError::Server {
        retry_after: None,
        status: 503,
        message: "busy".into(),
    }
}

#[tokio::test]
async fn wraps_any_provider() {
    let limited = LlmError::RateLimited {
        message: "wait".into(),
        retry_after: Some(Duration::ZERO),
    };
    let inner = ScriptedLlm::new()
        .fail(limited.clone())
        .fail(limited)
        .respond(LlmResponse::text("done"));
    let llm = RetryingLlm::new(inner.clone(), slow_backoff());
    let r = within(llm.call(ask("a"), &cx())).await.unwrap();
    assert_eq!(r.message.text(), "done");
    assert_eq!(inner.request_count(), 3);
    assert_eq!(llm.provider_name(), "scripted");
    assert_eq!(llm.model_name(), "scripted");
}

#[tokio::test]
async fn scripted_stream_failing_midway_is_not_retried() {
    let inner = ScriptedLlm::new()
        .then(ScriptStep::Fail(server_error()))
        .then(ScriptStep::StreamThenFail(
            vec![LlmChunk::TextDelta("x".into())],
            server_error(),
        ))
        .respond(LlmResponse::text("unused"));
    let llm = RetryingLlm::new(inner.clone(), fast_backoff());
    let cx = cx();
    let (chunks, err) = drain(llm.stream(ask("a"), &cx)).await;
    assert_eq!(chunks, vec![LlmChunk::TextDelta("x".into())]);
    assert_eq!(
        err,
        Some(LlmError::Server {
            retry_after: None,
            status: 503,
            message: "gave up after 2 attempts (not retried: the stream had already \
                      forwarded chunks); last: busy"
                .into()
        })
    );
    assert_eq!(inner.request_count(), 2);
}

#[tokio::test]
async fn cancellation_interrupts_the_wait() {
    let inner = ScriptedLlm::new()
        .fail(server_error())
        .respond(LlmResponse::text("late"));
    let llm = RetryingLlm::new(inner.clone(), slow_backoff());
    let cx = cx();
    let cancel = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    assert_eq!(
        within(llm.call(ask("a"), &cx)).await.unwrap_err(),
        LlmError::Cancelled
    );
    assert_eq!(inner.request_count(), 1);

    // The same for a stream waiting to retry.
    let inner = ScriptedLlm::new()
        .fail(server_error())
        .respond(LlmResponse::text("late"));
    let llm = RetryingLlm::new(inner, slow_backoff());
    let cx = support::cx();
    let cancel = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let (chunks, err) = within(drain(llm.stream(ask("a"), &cx))).await;
    assert!(chunks.is_empty());
    assert_eq!(err, Some(LlmError::Cancelled));
}

#[tokio::test]
async fn policy_none_never_retries() {
    let inner = ScriptedLlm::new()
        .fail(server_error())
        .respond(LlmResponse::text("x"));
    let llm = RetryingLlm::new(inner.clone(), RetryPolicy::none());
    assert_eq!(llm.call(ask("a"), &cx()).await.unwrap_err(), server_error());
    assert_eq!(inner.request_count(), 1);
}
