//! The provider conformance suite, against a fixture playing the OpenAI
//! Responses API's wire form.

use crate::support;

use std::sync::Arc;

use looopy_core::LlmProvider;
use looopy_llm_litellm::OpenAiResponsesProvider;
use looopy_testkit::provider_conformance::{OpenAiResponsesWire, run_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_provider_conforms() {
    let make = |url: &str| -> Arc<dyn LlmProvider> {
        let mut config = support::config_for(url);
        config.model = "test-model".into();
        Arc::new(OpenAiResponsesProvider::new(config).expect("a valid configuration"))
    };
    run_all(&OpenAiResponsesWire, &make).await;
}
