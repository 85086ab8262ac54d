//! The provider conformance suite, against a fixture playing the chat
//! completions wire form.

use crate::support;

use std::sync::Arc;

use looopy_core::LlmProvider;
use looopy_llm_litellm::LiteLlmProvider;
use looopy_testkit::provider_conformance::{OpenAiChatWire, run_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_completions_provider_conforms() {
    let make = |url: &str| -> Arc<dyn LlmProvider> {
        let mut config = support::config_for(url);
        config.model = "test-model".into();
        Arc::new(LiteLlmProvider::new(config).expect("a valid configuration"))
    };
    run_all(&OpenAiChatWire, &make).await;
}
