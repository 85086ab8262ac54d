//! [`GeminiConfig`]: where the Gemini API is, which model, the key, the
//! generation defaults and how long to wait.

use std::time::Duration;

use looopy_core::LlmError;
use looopy_core::provider::env_value;

/// Environment variable with the API key (sent as `x-goog-api-key`).
pub const ENV_GEMINI_API_KEY: &str = "GEMINI_API_KEY";
/// Read when [`ENV_GEMINI_API_KEY`] is not set, as Google's SDKs do.
pub const ENV_GOOGLE_API_KEY: &str = "GOOGLE_API_KEY";
/// Environment variable with a base URL other than Google's (a proxy, a mock).
pub const ENV_GEMINI_BASE_URL: &str = "GEMINI_BASE_URL";
/// Google's endpoint, the base of `{base}/models/{model}:generateContent`.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// An API key ([`looopy_core::provider::ApiKey`]). `Debug` and `Display`
/// never show it.
pub type GeminiApiKey = looopy_core::provider::ApiKey;

/// How to reach a Gemini model.
///
/// Fields of a request ([`LlmRequest`](looopy_core::LlmRequest)) override
/// the defaults here.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GeminiConfig {
    /// Base URL (default [`DEFAULT_BASE_URL`]).
    pub base_url: String,
    /// The key, sent as `x-goog-api-key`.
    pub api_key: Option<GeminiApiKey>,
    /// The model, such as `gemini-2.5-flash`.
    pub model: String,
    /// Default temperature.
    pub temperature: Option<f32>,
    /// Default `maxOutputTokens`.
    pub max_output_tokens: Option<u32>,
    /// `thinkingConfig.thinkingBudget` (tokens; `0` turns thinking off on
    /// the models that allow it). Unset: the model's own default.
    pub thinking_budget: Option<i32>,
    /// `thinkingConfig.includeThoughts`: the model's thought summaries come
    /// back as reasoning (default true).
    pub include_thoughts: bool,
    /// Connect timeout (default 10 s).
    pub connect_timeout: Duration,
    /// Whole-request timeout (default 600 s).
    pub request_timeout: Duration,
    /// Longest silence between two stream events (default 120 s).
    pub stream_idle_timeout: Duration,
}

impl GeminiConfig {
    /// Google's endpoint, this model, no key.
    pub fn new(model: impl Into<String>) -> Self {
        GeminiConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: model.into(),
            temperature: None,
            max_output_tokens: None,
            thinking_budget: None,
            include_thoughts: true,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            stream_idle_timeout: Duration::from_secs(120),
        }
    }

    /// This model, with the key from [`ENV_GEMINI_API_KEY`] or
    /// [`ENV_GOOGLE_API_KEY`] and the base URL from [`ENV_GEMINI_BASE_URL`]
    /// when set. Fails with [`LlmError::NotConfigured`] when neither key
    /// variable is set.
    pub fn from_env(model: impl Into<String>) -> Result<Self, LlmError> {
        Self::from_lookup(model, |name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(
        model: impl Into<String>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, LlmError> {
        let get = |name: &str| env_value(&lookup, name);
        let key = get(ENV_GEMINI_API_KEY)
            .or_else(|| get(ENV_GOOGLE_API_KEY))
            .ok_or_else(|| LlmError::NotConfigured {
                message: format!(
                    "set {ENV_GEMINI_API_KEY} (or {ENV_GOOGLE_API_KEY}) to a Gemini API key \
                     (https://aistudio.google.com/apikey)"
                ),
            })?;
        let mut config = GeminiConfig::new(model).with_api_key(key);
        if let Some(url) = get(ENV_GEMINI_BASE_URL) {
            config.base_url = url;
        }
        Ok(config)
    }

    /// Sets the key.
    pub fn with_api_key(mut self, key: impl Into<GeminiApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the base URL.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sets the default temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the default `maxOutputTokens`.
    pub fn with_max_output_tokens(mut self, max: u32) -> Self {
        self.max_output_tokens = Some(max);
        self
    }

    /// Sets the thinking budget.
    pub fn with_thinking_budget(mut self, tokens: i32) -> Self {
        self.thinking_budget = Some(tokens);
        self
    }

    /// Says whether thought summaries are asked for.
    pub fn with_include_thoughts(mut self, include: bool) -> Self {
        self.include_thoughts = include;
        self
    }

    /// Sets the whole-request timeout.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the idle gap allowed between stream events.
    pub fn with_stream_idle_timeout(mut self, timeout: Duration) -> Self {
        self.stream_idle_timeout = timeout;
        self
    }

    /// The URL of a call to `model` (`generateContent`, or
    /// `streamGenerateContent?alt=sse` when streamed).
    pub fn endpoint(&self, model: &str, stream: bool) -> String {
        let base = self.base_url.trim_end_matches('/');
        if stream {
            format!("{base}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/models/{model}:generateContent")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_comes_from_either_variable_and_is_never_printed() {
        let e = GeminiConfig::from_lookup("m", |_| None).unwrap_err();
        assert!(
            e.to_string().contains(ENV_GEMINI_API_KEY)
                && e.to_string().contains(ENV_GOOGLE_API_KEY),
            "{e}"
        );
        let c = GeminiConfig::from_lookup("gemini-2.5-flash", |n| {
            (n == ENV_GOOGLE_API_KEY).then(|| "g-secret".to_owned())
        })
        .unwrap();
        assert_eq!(c.api_key.as_ref().unwrap().expose(), "g-secret");
        assert!(!format!("{c:?}").contains("g-secret"));
        assert_eq!(
            c.endpoint("gemini-2.5-flash", true),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        let c = GeminiConfig::from_lookup("m", |n| match n {
            ENV_GEMINI_API_KEY => Some("first".into()),
            ENV_GOOGLE_API_KEY => Some("second".into()),
            ENV_GEMINI_BASE_URL => Some("http://127.0.0.1:9/v1beta/".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.api_key.as_ref().unwrap().expose(), "first");
        assert_eq!(
            c.endpoint("m", false),
            "http://127.0.0.1:9/v1beta/models/m:generateContent"
        );
    }
}
