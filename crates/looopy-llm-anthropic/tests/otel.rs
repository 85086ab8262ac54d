//! GenAI span fields of Anthropic calls, alone and inside an agent loop:
//! the provider's name and the token counts, the prompt cache's included
//! (and the provider conformance suite's span check).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use looopy_core::{History, LlmProvider, LlmRequest, Message, TurnContext};
use looopy_llm_anthropic::{AnthropicConfig, AnthropicProvider};
use looopy_loop::AgentLoop;
use looopy_loop::layers::{RetryPolicy, RetryingLlm};
use looopy_testkit::anthropic_fixture::anthropic;
use looopy_testkit::provider_conformance::{AnthropicWire, chat_spans};
use looopy_testkit::{FixtureReply, OpenAiFixture, SpanCapture, attribute as attr};
use opentelemetry::Value;

fn cached_answer() -> FixtureReply {
    FixtureReply::json(anthropic::message_with_usage(
        vec![anthropic::text_block("ok")],
        "end_turn",
        anthropic::usage(5, 7, 1000, 200),
    ))
}

fn provider(f: &OpenAiFixture) -> AnthropicProvider {
    AnthropicProvider::new(
        AnthropicConfig::new("claude-test")
            .with_api_key("k")
            .with_base_url(f.url()),
    )
    .unwrap()
}

#[tokio::test]
async fn chat_spans_carry_the_provider_and_the_cache_counts() {
    let capture = SpanCapture::install();
    let f = OpenAiFixture::start().await.unwrap();
    f.push(cached_answer()).push(cached_answer());

    // Alone: the provider's own span.
    let request = LlmRequest {
        messages: History::from(vec![Message::user("hi")]),
        ..Default::default()
    };
    provider(&f)
        .call(request, &TurnContext::new("t", "c"))
        .await
        .unwrap();
    // In a loop: the loop's span.
    let agent = AgentLoop::builder(RetryingLlm::new(provider(&f), RetryPolicy::none())).build();
    let (_, outcome) = agent
        .start_turn(
            History::from(vec![Message::user("hi")]),
            TurnContext::new("t", "c"),
        )
        .collect_all()
        .await;
    assert!(outcome.is_some());

    let spans = capture.spans();
    let chat: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "chat claude-test")
        .collect();
    assert_eq!(
        chat.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for span in chat {
        assert_eq!(
            attr(span, "gen_ai.provider.name"),
            Some(&Value::from("anthropic"))
        );
        assert_eq!(
            attr(span, "gen_ai.usage.input_tokens"),
            Some(&Value::I64(1205))
        );
        assert_eq!(
            attr(span, "gen_ai.usage.output_tokens"),
            Some(&Value::I64(7))
        );
        assert_eq!(
            attr(span, "gen_ai.usage.cache_read.input_tokens"),
            Some(&Value::I64(1000))
        );
        assert_eq!(
            attr(span, "gen_ai.usage.cache_creation.input_tokens"),
            Some(&Value::I64(200))
        );
    }
}

#[tokio::test]
async fn chat_spans_conform_whole_and_streamed() {
    let make = |url: &str| -> Arc<dyn LlmProvider> {
        Arc::new(
            AnthropicProvider::new(
                AnthropicConfig::new("claude-test")
                    .with_api_key("k")
                    .with_base_url(url),
            )
            .unwrap(),
        )
    };
    chat_spans(&AnthropicWire, &make).await;
}
