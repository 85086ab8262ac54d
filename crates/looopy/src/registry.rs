//! The model registry: a provider built from a `provider:model` string
//! ([`ModelRef`]), configured from the vendor's usual environment
//! variables and a few options.
//!
//! | Model string              | Provider                                   | Key, base URL                            |
//! |---------------------------|--------------------------------------------|------------------------------------------|
//! | `gemini:gemini-2.5-flash` | Gemini API (feature `gemini`)              | `GEMINI_API_KEY` or `GOOGLE_API_KEY`, `GEMINI_BASE_URL` |
//! | `openai:gpt-4.1`          | OpenAI Responses API (feature `openai`)    | `OPENAI_API_KEY`, `OPENAI_BASE_URL`      |
//! | `openai-chat:gpt-4o-mini` | OpenAI chat completions (feature `openai`) | `OPENAI_API_KEY`, `OPENAI_BASE_URL`      |
//! | `litellm:my-model`        | any OpenAI-compatible server (feature `openai`) | `LOOOPY_LLM_API_KEY`, a base URL (required) |
//! | `anthropic:claude-sonnet-4-5` | Anthropic Messages API (feature `anthropic`) | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` |
//!
//! [`ModelOptions`] override what the variables say (the base URL and the
//! key) and set the request defaults.

use std::sync::Arc;

use looopy_core::LlmProvider;
use looopy_core::models::{ModelRef, ProviderKind};

/// Options of a model built by [`build_model`], over the environment.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ModelOptions {
    /// A base URL other than the vendor's (a proxy, a mock server).
    pub base_url: Option<String>,
    /// The API key, over the vendor's variable.
    pub api_key: Option<String>,
    /// Default sampling temperature.
    pub temperature: Option<f32>,
    /// Default token limit per answer.
    pub max_tokens: Option<u32>,
    /// The thinking budget in tokens: Gemini's
    /// `thinkingConfig.thinkingBudget`, Anthropic's extended thinking.
    pub thinking_budget_tokens: Option<u32>,
    /// Anthropic's prompt caching (`None`: the provider's default, on).
    pub prompt_cache: Option<bool>,
}

impl ModelOptions {
    /// No options: the vendor's endpoint and variables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the base URL.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }
}

/// Why [`build_model`] made no provider.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildModelError {
    /// The provider's crate is not part of this build.
    #[error("the {provider} provider is not built into this program: {how}")]
    NotBuilt {
        /// The provider named.
        provider: ProviderKind,
        /// What to do instead.
        how: &'static str,
    },
    /// A `litellm:` model without a base URL.
    #[error(
        "{model} needs the OpenAI-compatible server's base URL: set `base_url` (or LOOOPY_LLM_BASE_URL)"
    )]
    NoBaseUrl {
        /// The model string.
        model: String,
    },
    /// The provider refused its configuration (a missing key, a bad URL).
    #[error("cannot configure {model}")]
    Provider {
        /// The model string.
        model: String,
        /// What the provider said.
        #[source]
        source: looopy_core::LlmError,
    },
}

/// OpenAI's endpoint, the base of `/responses` and `/chat/completions`.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Builds the provider of `model`, reading the vendor's variables through
/// `env` (`|k| std::env::var(k).ok()` for the process environment).
pub fn build_model(
    model: &ModelRef,
    options: &ModelOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmProvider>, BuildModelError> {
    let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    match model.provider {
        ProviderKind::Gemini => gemini(model, options, &get),
        ProviderKind::OpenAi | ProviderKind::OpenAiChat | ProviderKind::LiteLlm => {
            openai(model, options, &get)
        }
        ProviderKind::Anthropic => anthropic(model, options, &get),
        _ => Err(BuildModelError::NotBuilt {
            provider: model.provider,
            how: "this version of looopy does not know it",
        }),
    }
}

#[cfg(feature = "anthropic")]
fn anthropic(
    model: &ModelRef,
    options: &ModelOptions,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmProvider>, BuildModelError> {
    use looopy_llm_anthropic::{AnthropicConfig, AnthropicProvider};
    let failed = |source| BuildModelError::Provider {
        model: model.to_string(),
        source,
    };
    let mut config = match &options.api_key {
        Some(key) => {
            let mut c = AnthropicConfig::new(&model.model).with_api_key(key.as_str());
            if let Some(url) = get(looopy_llm_anthropic::ENV_BASE_URL) {
                c = c.with_base_url(url);
            }
            c
        }
        None => AnthropicConfig::from_lookup(&model.model, get).map_err(failed)?,
    };
    if let Some(url) = &options.base_url {
        config = config.with_base_url(url);
    }
    if let Some(t) = options.temperature {
        config = config.with_temperature(t);
    }
    if let Some(m) = options.max_tokens {
        config = config.with_max_tokens(m);
    }
    if let Some(b) = options.thinking_budget_tokens {
        config = config.with_thinking(b);
    }
    if let Some(on) = options.prompt_cache {
        config = config.with_prompt_cache(on);
    }
    Ok(Arc::new(AnthropicProvider::new(config).map_err(failed)?))
}

#[cfg(not(feature = "anthropic"))]
fn anthropic(
    model: &ModelRef,
    _: &ModelOptions,
    _: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmProvider>, BuildModelError> {
    Err(BuildModelError::NotBuilt {
        provider: model.provider,
        how: "build with the `anthropic` feature of the looopy crate, or reach Claude \
              through a LiteLLM proxy (`litellm:` with its base URL)",
    })
}

#[cfg(feature = "gemini")]
fn gemini(
    model: &ModelRef,
    options: &ModelOptions,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmProvider>, BuildModelError> {
    use looopy_llm_gemini::{GeminiConfig, GeminiProvider};
    let failed = |source| BuildModelError::Provider {
        model: model.to_string(),
        source,
    };
    let mut config = match &options.api_key {
        Some(key) => {
            let mut c = GeminiConfig::new(&model.model).with_api_key(key.as_str());
            if let Some(url) = get(looopy_llm_gemini::ENV_GEMINI_BASE_URL) {
                c = c.with_base_url(url);
            }
            c
        }
        None => GeminiConfig::from_lookup(&model.model, get).map_err(failed)?,
    };
    if let Some(url) = &options.base_url {
        config = config.with_base_url(url);
    }
    if let Some(t) = options.temperature {
        config = config.with_temperature(t);
    }
    if let Some(m) = options.max_tokens {
        config = config.with_max_output_tokens(m);
    }
    if let Some(b) = options.thinking_budget_tokens {
        config = config.with_thinking_budget(i32::try_from(b).unwrap_or(i32::MAX));
    }
    Ok(Arc::new(GeminiProvider::new(config).map_err(failed)?))
}

#[cfg(not(feature = "gemini"))]
fn gemini(
    model: &ModelRef,
    _: &ModelOptions,
    _: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmProvider>, BuildModelError> {
    Err(BuildModelError::NotBuilt {
        provider: model.provider,
        how: "build with the `gemini` feature of the looopy crate",
    })
}

#[cfg(feature = "openai")]
fn openai(
    model: &ModelRef,
    options: &ModelOptions,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmProvider>, BuildModelError> {
    use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider, OpenAiResponsesProvider};
    let failed = |source| BuildModelError::Provider {
        model: model.to_string(),
        source,
    };
    let litellm = model.provider == ProviderKind::LiteLlm;
    let base_url = match (&options.base_url, litellm) {
        (Some(url), _) => url.clone(),
        (None, true) => {
            get(looopy_llm_litellm::ENV_BASE_URL).ok_or_else(|| BuildModelError::NoBaseUrl {
                model: model.to_string(),
            })?
        }
        (None, false) => get("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.to_owned()),
    };
    let key_var = if litellm {
        looopy_llm_litellm::ENV_API_KEY
    } else {
        "OPENAI_API_KEY"
    };
    let key = options.api_key.clone().or_else(|| get(key_var));
    if key.is_none() && !litellm {
        return Err(failed(looopy_core::LlmError::NotConfigured {
            message: "set OPENAI_API_KEY to an OpenAI API key".into(),
        }));
    }
    let mut config = LiteLlmConfig::new(base_url, &model.model);
    if litellm {
        config = config.with_provider_name("litellm");
    }
    if let Some(key) = key {
        config = config.with_api_key(key);
    }
    if let Some(t) = options.temperature {
        config = config.with_temperature(t);
    }
    if let Some(m) = options.max_tokens {
        config = config.with_max_tokens(m);
    }
    Ok(match model.provider {
        ProviderKind::OpenAi => Arc::new(OpenAiResponsesProvider::new(config).map_err(failed)?),
        _ => Arc::new(LiteLlmProvider::new(config).map_err(failed)?),
    })
}

#[cfg(not(feature = "openai"))]
fn openai(
    model: &ModelRef,
    _: &ModelOptions,
    _: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmProvider>, BuildModelError> {
    Err(BuildModelError::NotBuilt {
        provider: model.provider,
        how: "build with the `openai` feature of the looopy crate",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn build(
        text: &str,
        options: &ModelOptions,
        vars: &'static [(&'static str, &'static str)],
    ) -> Result<Arc<dyn LlmProvider>, BuildModelError> {
        build_model(&text.parse().unwrap(), options, &env(vars))
    }

    fn fails(text: &str, vars: &'static [(&'static str, &'static str)]) -> BuildModelError {
        match build(text, &ModelOptions::new(), vars) {
            Ok(p) => panic!("{text} built {}", p.provider_name()),
            Err(e) => e,
        }
    }

    #[test]
    fn each_provider_reads_its_vendors_variables() {
        #[cfg(feature = "gemini")]
        {
            let none = ModelOptions::new();
            let p = build("gemini:gemini-2.5-flash", &none, &[("GOOGLE_API_KEY", "g")]).unwrap();
            assert_eq!(
                (p.provider_name(), p.model_name()),
                ("gcp.gemini", "gemini-2.5-flash")
            );
            let e = fails("gemini:gemini-2.5-flash", &[]);
            assert!(
                format!("{e}: {}", std::error::Error::source(&e).unwrap())
                    .contains("GEMINI_API_KEY"),
                "{e}"
            );
        }
        #[cfg(feature = "openai")]
        {
            let none = ModelOptions::new();
            let p = build("openai:gpt-4.1", &none, &[("OPENAI_API_KEY", "k")]).unwrap();
            assert_eq!((p.provider_name(), p.model_name()), ("openai", "gpt-4.1"));
            let e = fails("openai-chat:gpt-4o-mini", &[]);
            assert!(matches!(e, BuildModelError::Provider { .. }), "{e}");
            let e = fails("litellm:my-model", &[]);
            assert!(matches!(e, BuildModelError::NoBaseUrl { .. }), "{e}");
            let p = build(
                "litellm:my-model",
                &none,
                &[("LOOOPY_LLM_BASE_URL", "http://127.0.0.1:4000")],
            )
            .unwrap();
            assert_eq!(p.provider_name(), "litellm");
        }
        #[cfg(feature = "anthropic")]
        {
            let p = build(
                "anthropic:claude-sonnet-4-5",
                &ModelOptions::new(),
                &[("ANTHROPIC_API_KEY", "a")],
            )
            .unwrap();
            assert_eq!(
                (p.provider_name(), p.model_name()),
                ("anthropic", "claude-sonnet-4-5")
            );
            let e = fails("anthropic:claude-sonnet-4-5", &[]);
            assert!(matches!(e, BuildModelError::Provider { .. }), "{e}");
        }
        #[cfg(not(feature = "anthropic"))]
        {
            let e = fails("anthropic:claude-sonnet-4-5", &[("ANTHROPIC_API_KEY", "a")]);
            assert!(
                matches!(
                    e,
                    BuildModelError::NotBuilt {
                        provider: ProviderKind::Anthropic,
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains("litellm:"), "{e}");
        }
    }
}
