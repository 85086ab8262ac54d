//! [`LiteLlmConfig`]: where the endpoint is, which model, and how long to wait.

use std::fmt;
use std::time::Duration;

use looopy_core::provider::env_value;
use looopy_core::{LlmError, ToolChoice};

/// Environment variable with the endpoint's base URL (for example
/// `http://localhost:4000` for a LiteLLM proxy, or `https://api.openai.com/v1`).
pub const ENV_BASE_URL: &str = "LOOOPY_LLM_BASE_URL";
/// Environment variable with the API key (sent as `Authorization: Bearer …`).
pub const ENV_API_KEY: &str = "LOOOPY_LLM_API_KEY";
/// Environment variable with the model name (for example `gpt-4o-mini`).
pub const ENV_MODEL: &str = "LOOOPY_LLM_MODEL";

pub use looopy_core::provider::ApiKey;

/// How to reach an OpenAI-compatible chat completions endpoint.
///
/// Requests go to `{base_url}/chat/completions`. The base URL is what the
/// OpenAI SDKs call `base_url`: it includes any `/v1` prefix the server wants
/// (a LiteLLM proxy answers both with and without it).
///
/// Request fields ([`LlmRequest`](looopy_core::LlmRequest)) override the
/// defaults here field by field.
///
/// `Debug` shows neither the key nor the values of the extra headers.
#[derive(Clone)]
pub struct LiteLlmConfig {
    /// Base URL, without the trailing `/chat/completions`.
    pub base_url: String,
    /// Bearer token; `None` sends no `Authorization` header.
    pub api_key: Option<ApiKey>,
    /// Model used when the request names none.
    pub model: String,
    /// Name reported as `gen_ai.provider.name` (default `openai`).
    pub provider_name: String,
    /// Default sampling temperature.
    pub temperature: Option<f32>,
    /// Default upper bound on generated tokens.
    pub max_tokens: Option<u32>,
    /// Default upper bound on generated tokens, reasoning included
    /// (`max_completion_tokens`; reasoning models take it in place of
    /// `max_tokens`).
    pub max_completion_tokens: Option<u32>,
    /// Default for `parallel_tool_calls` (only sent when tools are offered).
    pub parallel_tool_calls: Option<bool>,
    /// Whether the endpoint takes `response_format: {type: json_schema}`
    /// (default true). When false, a request's
    /// [`ResponseFormat`](looopy_core::ResponseFormat) is not sent: its
    /// [`instruction`](looopy_core::ResponseFormat::instruction) is added to
    /// the system prompt instead, and the caller validates the answer.
    pub native_structured_output: bool,
    /// Default tool choice (only sent when tools are offered).
    pub tool_choice: Option<ToolChoice>,
    /// Headers added to every request (for instance LiteLLM tags or an
    /// organisation id). Values are not logged.
    pub extra_headers: Vec<(String, String)>,
    /// Limit on establishing the TCP/TLS connection.
    pub connect_timeout: Duration,
    /// Limit on a whole call, from sending the request to the last byte of
    /// the answer (streams included).
    pub request_timeout: Duration,
    /// Limit on the silence between two pieces of a streamed answer, and on
    /// the wait for the first one once the headers arrived.
    pub stream_idle_timeout: Duration,
}

impl fmt::Debug for LiteLlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("LiteLlmConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("model", &self.model)
            .field("provider_name", &self.provider_name)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("max_completion_tokens", &self.max_completion_tokens)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .field("native_structured_output", &self.native_structured_output)
            .field("tool_choice", &self.tool_choice)
            .field("extra_headers", &header_names)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .finish()
    }
}

impl LiteLlmConfig {
    /// A configuration with the default timeouts (connect 10 s, request
    /// 600 s, stream idle 120 s), no key and no sampling defaults.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        LiteLlmConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            provider_name: "openai".to_owned(),
            temperature: None,
            max_tokens: None,
            max_completion_tokens: None,
            parallel_tool_calls: None,
            native_structured_output: true,
            tool_choice: None,
            extra_headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            stream_idle_timeout: Duration::from_secs(120),
        }
    }

    /// Reads [`ENV_BASE_URL`], [`ENV_API_KEY`] (optional) and [`ENV_MODEL`].
    ///
    /// Fails with [`LlmError::NotConfigured`] naming the missing variable.
    pub fn from_env() -> Result<Self, LlmError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`
    /// (for tests and for configuration layers other than the process
    /// environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let get = |name: &str| env_value(&lookup, name);
        let base_url = get(ENV_BASE_URL).ok_or_else(|| LlmError::NotConfigured {
            message: format!(
                "set {ENV_BASE_URL} to the endpoint's base URL (for example http://localhost:4000)"
            ),
        })?;
        let model = get(ENV_MODEL).ok_or_else(|| LlmError::NotConfigured {
            message: format!("set {ENV_MODEL} to the model name (for example gpt-4o-mini)"),
        })?;
        let mut config = LiteLlmConfig::new(base_url, model);
        config.api_key = get(ENV_API_KEY).map(ApiKey::from);
        Ok(config)
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the name reported as `gen_ai.provider.name`.
    pub fn with_provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = name.into();
        self
    }

    /// Sets the default temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the default token limit.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the default `max_completion_tokens`.
    pub fn with_max_completion_tokens(mut self, max_completion_tokens: u32) -> Self {
        self.max_completion_tokens = Some(max_completion_tokens);
        self
    }

    /// Sets the default `parallel_tool_calls`.
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Says whether the endpoint enforces JSON schemas natively (see
    /// [`native_structured_output`](Self::native_structured_output)).
    pub fn with_native_structured_output(mut self, native: bool) -> Self {
        self.native_structured_output = native;
        self
    }

    /// Sets the default tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Adds a header sent with every request.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }

    /// Sets the connect timeout.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the whole-request timeout.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the idle gap allowed between stream chunks.
    pub fn with_stream_idle_timeout(mut self, timeout: Duration) -> Self {
        self.stream_idle_timeout = timeout;
        self
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let c = LiteLlmConfig::new("http://x", "m")
            .with_api_key("sk-very-secret")
            .with_header("x-org", "org-hidden");
        let s = format!("{c:?}");
        assert!(!s.contains("sk-very-secret"), "{s}");
        assert!(s.contains("redacted"));
        assert!(s.contains("x-org") && !s.contains("org-hidden"), "{s}");
        assert_eq!(c.endpoint(), "http://x/chat/completions");
    }

    #[test]
    fn from_lookup_names_the_missing_variable() {
        let e = LiteLlmConfig::from_lookup(|_| None).unwrap_err();
        assert!(e.to_string().contains(ENV_BASE_URL), "{e}");
        let e = LiteLlmConfig::from_lookup(|n| (n == ENV_BASE_URL).then(|| "http://h".into()))
            .unwrap_err();
        assert!(e.to_string().contains(ENV_MODEL), "{e}");
        let c = LiteLlmConfig::from_lookup(|n| match n {
            ENV_BASE_URL => Some("http://h/v1/".into()),
            ENV_MODEL => Some("m".into()),
            ENV_API_KEY => Some("k".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.endpoint(), "http://h/v1/chat/completions");
        assert_eq!(c.api_key.unwrap().expose(), "k");
    }
}
