//! The provider conformance suite, against a fixture playing the Gemini
//! API's wire form.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::LlmProvider;
use looopy_llm_gemini::{GeminiConfig, GeminiProvider};
use looopy_testkit::provider_conformance::{GeminiWire, run_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gemini_provider_conforms() {
    let make = |url: &str| -> Arc<dyn LlmProvider> {
        let config = GeminiConfig::new("gemini-2.5-flash")
            .with_base_url(url)
            .with_api_key("g-conformance")
            .with_request_timeout(Duration::from_secs(20))
            .with_stream_idle_timeout(Duration::from_secs(10));
        Arc::new(GeminiProvider::new(config).expect("a valid configuration"))
    };
    run_all(&GeminiWire, &make).await;
}
