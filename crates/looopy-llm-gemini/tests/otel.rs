//! The `chat` spans of Gemini calls, as exported: `gcp.gemini`, the token
//! counts, the cached and the thinking tokens included.
#![allow(clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use looopy_core::LlmProvider;
use looopy_llm_gemini::{GeminiConfig, GeminiProvider};
use looopy_testkit::provider_conformance::{GeminiWire, chat_spans};

#[tokio::test]
async fn gemini_spans_carry_the_cache_and_reasoning_counts() {
    let make = |url: &str| -> Arc<dyn LlmProvider> {
        let config = GeminiConfig::new("gemini-2.5-flash")
            .with_base_url(url)
            .with_api_key("g-spans")
            .with_request_timeout(Duration::from_secs(20))
            .with_stream_idle_timeout(Duration::from_secs(10));
        Arc::new(GeminiProvider::new(config).expect("a valid configuration"))
    };
    chat_spans(&GeminiWire, &make).await;
}
