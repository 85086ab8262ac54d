//! [`AnthropicConfig`]: where the API is, which model, thinking, caching
//! and how long to wait.

use std::fmt;
use std::time::Duration;

use looopy_core::provider::env_value;
use looopy_core::{LlmError, ToolChoice};

/// Environment variable with the API key (sent as `x-api-key`), as the
/// official SDKs read it.
pub const ENV_API_KEY: &str = "ANTHROPIC_API_KEY";
/// Environment variable with the base URL (default
/// [`DEFAULT_BASE_URL`]), as the official SDKs read it.
pub const ENV_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// The public API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent unless configured otherwise.
pub const DEFAULT_API_VERSION: &str = "2023-06-01";
/// The `max_tokens` sent when neither the request nor the configuration
/// sets one (the Messages API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
/// The smallest thinking budget the API accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;

pub use looopy_core::provider::ApiKey;

/// How to reach the Messages API, and what to ask of it.
///
/// Requests go to `{base_url}/v1/messages`. Request fields
/// ([`LlmRequest`](looopy_core::LlmRequest)) override the defaults here
/// field by field. Build one with [`new`](Self::new) or
/// [`from_env`](Self::from_env) and the `with_*` methods; the provider checks
/// it when it is made ([`validate`](Self::validate)).
///
/// `Debug` shows neither the key nor the values of the extra headers.
#[derive(Clone)]
pub struct AnthropicConfig {
    /// Base URL, without `/v1/messages` (default [`DEFAULT_BASE_URL`]).
    pub base_url: String,
    /// The key, sent as `x-api-key`; `None` sends none (for a proxy that
    /// adds it).
    pub api_key: Option<ApiKey>,
    /// Model used when the request names none (`claude-sonnet-4-5`).
    pub model: String,
    /// The `anthropic-version` header (default [`DEFAULT_API_VERSION`]).
    pub api_version: String,
    /// Name reported as `gen_ai.provider.name` and written into the
    /// reasoning parts this provider makes (default `anthropic`): reasoning
    /// is sent back only to a provider of the same name.
    pub provider_name: String,
    /// `max_tokens` when the request sets neither `max_tokens` nor
    /// `max_completion_tokens` (default [`DEFAULT_MAX_TOKENS`]).
    pub max_tokens: u32,
    /// Extended thinking: the `thinking.budget_tokens` sent with every
    /// request; `None` (the default) leaves thinking off. At least
    /// [`MIN_THINKING_BUDGET`], and below `max_tokens`.
    pub thinking_budget_tokens: Option<u32>,
    /// Prompt caching: `cache_control` breakpoints on the system prompt,
    /// the last tool and the newest message (default on).
    pub prompt_cache: bool,
    /// Whether a request's [`ResponseFormat`](looopy_core::ResponseFormat)
    /// is sent as the API's structured output, `output_config.format`
    /// (`json_schema`), which constrains the answer to the schema (default
    /// on). Models older than the Claude 4.5 family refuse the parameter:
    /// with this off, the format's
    /// [`instruction`](looopy_core::ResponseFormat::instruction) is added to
    /// the system prompt instead, and the caller validates the answer.
    pub native_structured_output: bool,
    /// Default sampling temperature.
    pub temperature: Option<f32>,
    /// Default tool choice (only sent when tools are offered).
    pub tool_choice: Option<ToolChoice>,
    /// Default for parallel tool use (`false` sends
    /// `disable_parallel_tool_use`).
    pub parallel_tool_calls: Option<bool>,
    /// Headers added to every request (`anthropic-beta`, say). Values are
    /// not logged.
    pub extra_headers: Vec<(String, String)>,
    /// Limit on establishing the TCP/TLS connection.
    pub connect_timeout: Duration,
    /// Limit on a whole call, from sending the request to the last byte of
    /// the answer (streams included).
    pub request_timeout: Duration,
    /// Limit on the silence between two events of a streamed answer, and
    /// on the wait for the first one once the headers arrived.
    pub stream_idle_timeout: Duration,
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("model", &self.model)
            .field("api_version", &self.api_version)
            .field("provider_name", &self.provider_name)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget_tokens", &self.thinking_budget_tokens)
            .field("prompt_cache", &self.prompt_cache)
            .field("native_structured_output", &self.native_structured_output)
            .field("temperature", &self.temperature)
            .field("tool_choice", &self.tool_choice)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .field("extra_headers", &header_names)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .finish()
    }
}

impl AnthropicConfig {
    /// A configuration for `model` on the public API, without a key, with
    /// prompt caching on, thinking off and the default timeouts (connect
    /// 10 s, request 600 s, stream idle 120 s).
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: model.into(),
            api_version: DEFAULT_API_VERSION.to_owned(),
            provider_name: "anthropic".to_owned(),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget_tokens: None,
            prompt_cache: true,
            native_structured_output: true,
            temperature: None,
            tool_choice: None,
            parallel_tool_calls: None,
            extra_headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            stream_idle_timeout: Duration::from_secs(120),
        }
    }

    /// A configuration for `model` with the key from [`ENV_API_KEY`]
    /// (required) and the base URL from [`ENV_BASE_URL`] (optional).
    ///
    /// Fails with [`LlmError::NotConfigured`] naming the missing variable.
    pub fn from_env(model: impl Into<String>) -> Result<Self, LlmError> {
        Self::from_lookup(model, |name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`
    /// (for tests and for configuration layers other than the process
    /// environment).
    pub fn from_lookup(
        model: impl Into<String>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, LlmError> {
        let get = |name: &str| env_value(&lookup, name);
        let key = get(ENV_API_KEY).ok_or_else(|| LlmError::NotConfigured {
            message: format!(
                "set {ENV_API_KEY} to an Anthropic API key (from console.anthropic.com)"
            ),
        })?;
        let mut config = AnthropicConfig::new(model).with_api_key(key);
        if let Some(url) = get(ENV_BASE_URL) {
            config.base_url = url;
        }
        Ok(config)
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the base URL (without `/v1/messages`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Sets the `anthropic-version` header.
    pub fn with_api_version(mut self, version: impl Into<String>) -> Self {
        self.api_version = version.into();
        self
    }

    /// Sets the name reported as `gen_ai.provider.name`.
    pub fn with_provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = name.into();
        self
    }

    /// Sets the default `max_tokens`.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Turns extended thinking on with this budget.
    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget_tokens = Some(budget_tokens);
        self
    }

    /// Turns the prompt cache breakpoints on or off.
    pub fn with_prompt_cache(mut self, on: bool) -> Self {
        self.prompt_cache = on;
        self
    }

    /// Sends response formats as `output_config.format` (on, the default)
    /// or as an instruction in the system prompt (off).
    pub fn with_native_structured_output(mut self, on: bool) -> Self {
        self.native_structured_output = on;
        self
    }

    /// Sets the default temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the default tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets whether the model may call several tools in one answer.
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
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

    /// Sets the idle gap allowed between stream events.
    pub fn with_stream_idle_timeout(mut self, timeout: Duration) -> Self {
        self.stream_idle_timeout = timeout;
        self
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        // A base URL given with the version prefix (as some proxies are
        // written down) is taken as it is.
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/messages")
    }

    /// Checks what the API would refuse on every request: no model, a
    /// thinking budget under [`MIN_THINKING_BUDGET`] or not below
    /// `max_tokens`.
    pub fn validate(&self) -> Result<(), LlmError> {
        if self.model.trim().is_empty() {
            return Err(LlmError::NotConfigured {
                message: "no model: name one, for example claude-sonnet-4-5".into(),
            });
        }
        if let Some(budget) = self.thinking_budget_tokens {
            if budget < MIN_THINKING_BUDGET {
                return Err(LlmError::NotConfigured {
                    message: format!(
                        "thinking budget {budget} is below the API's minimum of {MIN_THINKING_BUDGET} tokens"
                    ),
                });
            }
            if budget >= self.max_tokens {
                return Err(LlmError::NotConfigured {
                    message: format!(
                        "thinking budget {budget} must be below max_tokens ({}): raise max_tokens or lower the budget",
                        self.max_tokens
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let c = AnthropicConfig::new("m")
            .with_api_key("sk-ant-very-secret")
            .with_header("anthropic-beta", "hidden-beta");
        let s = format!("{c:?}");
        assert!(!s.contains("sk-ant-very-secret"), "{s}");
        assert!(
            s.contains("anthropic-beta") && !s.contains("hidden-beta"),
            "{s}"
        );
        assert_eq!(c.endpoint(), "https://api.anthropic.com/v1/messages");
        let c = c.with_base_url("http://127.0.0.1:9/v1/");
        assert_eq!(c.endpoint(), "http://127.0.0.1:9/v1/messages");
    }

    #[test]
    fn from_lookup_reads_the_sdk_variables() {
        let e = AnthropicConfig::from_lookup("m", |_| None).unwrap_err();
        assert!(e.to_string().contains(ENV_API_KEY), "{e}");
        let c = AnthropicConfig::from_lookup("m", |n| match n {
            ENV_API_KEY => Some("k".into()),
            ENV_BASE_URL => Some("http://proxy".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.api_key.unwrap().expose(), "k");
        assert_eq!(c.base_url, "http://proxy");
        assert!(c.prompt_cache);
    }

    #[test]
    fn validate_refuses_budgets_the_api_would() {
        assert!(AnthropicConfig::new("m").validate().is_ok());
        assert!(AnthropicConfig::new(" ").validate().is_err());
        let e = AnthropicConfig::new("m")
            .with_thinking(100)
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("1024"), "{e}");
        let e = AnthropicConfig::new("m")
            .with_max_tokens(2000)
            .with_thinking(4000)
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("max_tokens"), "{e}");
        assert!(
            AnthropicConfig::new("m")
                .with_max_tokens(16000)
                .with_thinking(4000)
                .validate()
                .is_ok()
        );
    }
}
