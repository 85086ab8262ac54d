//! The provider conformance suite, against a fixture playing the Messages
//! API's wire form.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use looopy_core::LlmProvider;
use looopy_llm_anthropic::{AnthropicConfig, AnthropicProvider};
use looopy_testkit::provider_conformance::{AnthropicWire, run_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_provider_conforms() {
    let make = |url: &str| -> Arc<dyn LlmProvider> {
        Arc::new(
            AnthropicProvider::new(
                AnthropicConfig::new("claude-test")
                    .with_api_key("sk-ant-test")
                    .with_base_url(url)
                    .with_request_timeout(Duration::from_secs(20))
                    .with_stream_idle_timeout(Duration::from_secs(10)),
            )
            .unwrap(),
        )
    };
    run_all(&AnthropicWire, &make).await;
}
