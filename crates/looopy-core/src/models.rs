//! Model references: `provider:model` strings (`gemini:gemini-2.5-flash`,
//! `openai:gpt-4.1`), the providers they name, and the context window and
//! output limit the vendors publish for their models.
//!
//! This is data only: building a provider from a [`ModelRef`] is the job
//! of the crate that depends on the provider crates (the `looopy` facade,
//! behind its features), so that no provider crate depends on another.

use std::fmt;
use std::str::FromStr;

/// The provider a [`ModelRef`] names: the part before the first `:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderKind {
    /// `anthropic:`: the Anthropic Messages API.
    Anthropic,
    /// `gemini:`: the Google Gemini API.
    Gemini,
    /// `openai:`: the OpenAI Responses API.
    OpenAi,
    /// `openai-chat:`: OpenAI's chat completions API.
    OpenAiChat,
    /// `litellm:`: a LiteLLM proxy, or any OpenAI-compatible chat
    /// completions server, at a configured base URL.
    LiteLlm,
}

impl ProviderKind {
    /// Every provider, in the order the docs list them.
    pub const ALL: [ProviderKind; 5] = [
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
        ProviderKind::OpenAi,
        ProviderKind::OpenAiChat,
        ProviderKind::LiteLlm,
    ];

    /// The prefix of model strings (`gemini`).
    pub fn prefix(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::OpenAi => "openai",
            ProviderKind::OpenAiChat => "openai-chat",
            ProviderKind::LiteLlm => "litellm",
        }
    }

    /// The provider of a prefix; `None` for any other text.
    pub fn from_prefix(prefix: &str) -> Option<ProviderKind> {
        ProviderKind::ALL.into_iter().find(|p| p.prefix() == prefix)
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

/// A model of a provider: `gemini:gemini-2.5-flash`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    /// The provider.
    pub provider: ProviderKind,
    /// The model, as the provider names it (`gemini-2.5-flash`).
    pub model: String,
}

/// Why a model string is not a [`ModelRef`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelRefError {
    /// Nothing before the `:`, or a prefix that names no provider.
    #[error(
        "{text:?} names no provider: write `provider:model` with provider one of anthropic, \
         gemini, openai (Responses API), openai-chat, litellm (for example gemini:gemini-2.5-flash), \
         or give a bare model name with a `base_url` for an OpenAI-compatible server"
    )]
    UnknownProvider {
        /// The model string.
        text: String,
    },
    /// A provider but no model after the `:`.
    #[error("{text:?} names no model after the provider (for example {provider}:{example})")]
    NoModel {
        /// The model string.
        text: String,
        /// The provider it named.
        provider: ProviderKind,
        /// A model of that provider.
        example: &'static str,
    },
}

impl ModelRef {
    /// A reference to `model` of `provider`.
    pub fn new(provider: ProviderKind, model: impl Into<String>) -> Self {
        ModelRef {
            provider,
            model: model.into(),
        }
    }

    /// Reads `provider:model`; `Ok(None)` for text without a provider
    /// prefix (a bare model name, such as `gpt-4o-mini` or Ollama's
    /// `llama3:8b`, meant for an OpenAI-compatible server at a base URL).
    pub fn parse(text: &str) -> Result<Option<ModelRef>, ModelRefError> {
        let text = text.trim();
        let Some((prefix, model)) = text.split_once(':') else {
            return Ok(None);
        };
        let Some(provider) = ProviderKind::from_prefix(prefix) else {
            return Ok(None);
        };
        let model = model.trim();
        if model.is_empty() {
            return Err(ModelRefError::NoModel {
                text: text.to_owned(),
                provider,
                example: example_model(provider),
            });
        }
        Ok(Some(ModelRef::new(provider, model)))
    }

    /// What the vendor publishes of this model's limits, when this crate
    /// knows the model (dated snapshots match their family:
    /// `gpt-4.1-2025-04-14` is `gpt-4.1`). A `litellm:` model is looked up
    /// by its name after any `vendor/` prefix.
    pub fn limits(&self) -> Option<ModelLimits> {
        let (table, name) = match self.provider {
            ProviderKind::Anthropic => (ANTHROPIC, self.model.as_str()),
            ProviderKind::Gemini => (GEMINI, self.model.as_str()),
            ProviderKind::OpenAi | ProviderKind::OpenAiChat => (OPENAI, self.model.as_str()),
            ProviderKind::LiteLlm => {
                let name = self.model.rsplit('/').next().unwrap_or(&self.model);
                return [ANTHROPIC, GEMINI, OPENAI]
                    .into_iter()
                    .find_map(|t| lookup(t, name));
            }
        };
        lookup(table, name)
    }
}

impl FromStr for ModelRef {
    type Err = ModelRefError;

    /// Like [`ModelRef::parse`], refusing text without a provider.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ModelRef::parse(text)?.ok_or_else(|| ModelRefError::UnknownProvider {
            text: text.to_owned(),
        })
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

/// A model's published limits, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    /// The context window: input and output together.
    pub context_window: u32,
    /// The most tokens one answer may have.
    pub max_output_tokens: u32,
}

const fn limits(context_window: u32, max_output_tokens: u32) -> ModelLimits {
    ModelLimits {
        context_window,
        max_output_tokens,
    }
}

/// Model families and their limits, from the vendors' model pages.
type Table = &'static [(&'static str, ModelLimits)];

const ANTHROPIC: Table = &[
    ("claude-opus-4-1", limits(200_000, 32_000)),
    ("claude-opus-4", limits(200_000, 32_000)),
    ("claude-sonnet-4-5", limits(200_000, 64_000)),
    ("claude-sonnet-4", limits(200_000, 64_000)),
    ("claude-haiku-4-5", limits(200_000, 64_000)),
    ("claude-3-7-sonnet", limits(200_000, 64_000)),
    ("claude-3-5-haiku", limits(200_000, 8_192)),
];

const GEMINI: Table = &[
    ("gemini-2.5-pro", limits(1_048_576, 65_536)),
    ("gemini-2.5-flash-lite", limits(1_048_576, 65_536)),
    ("gemini-2.5-flash", limits(1_048_576, 65_536)),
    ("gemini-2.0-flash-lite", limits(1_048_576, 8_192)),
    ("gemini-2.0-flash", limits(1_048_576, 8_192)),
];

const OPENAI: Table = &[
    ("gpt-5", limits(400_000, 128_000)),
    ("gpt-4.1", limits(1_047_576, 32_768)),
    ("gpt-4o-mini", limits(128_000, 16_384)),
    ("gpt-4o", limits(128_000, 16_384)),
    ("o4-mini", limits(200_000, 100_000)),
    ("o3", limits(200_000, 100_000)),
];

/// The longest family that `name` is or starts (at a `-`).
fn lookup(table: Table, name: &str) -> Option<ModelLimits> {
    family_lookup(table, name).map(|(_, l)| l)
}

/// The longest family in `table` that `name` is or starts (at a `-`),
/// with its value: `gpt-4.1-2025-04-14` is `gpt-4.1`, `gpt-4.10` is not.
/// The one rule by which every per-model table of this crate matches names.
pub(crate) fn family_lookup<'t, T: Copy>(
    table: &[(&'t str, T)],
    name: &str,
) -> Option<(&'t str, T)> {
    table
        .iter()
        .filter(|(family, _)| {
            name.strip_prefix(family)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
        .max_by_key(|(family, _)| family.len())
        .map(|(family, l)| (*family, *l))
}

fn example_model(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::Anthropic => "claude-sonnet-4-5",
        ProviderKind::Gemini => "gemini-2.5-flash",
        ProviderKind::OpenAi => "gpt-4.1",
        ProviderKind::OpenAiChat => "gpt-4o-mini",
        ProviderKind::LiteLlm => "my-model",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_strings_name_a_provider_and_a_model() {
        let m: ModelRef = "gemini:gemini-2.5-flash".parse().unwrap();
        assert_eq!(m, ModelRef::new(ProviderKind::Gemini, "gemini-2.5-flash"));
        assert_eq!(m.to_string(), "gemini:gemini-2.5-flash");
        for p in ProviderKind::ALL {
            let text = format!("{p}:{}", example_model(p));
            assert_eq!(
                ModelRef::parse(&text).unwrap().unwrap().provider,
                p,
                "{text}"
            );
        }
        // The model keeps its own colons (a LiteLLM or Ollama tag).
        let m = ModelRef::parse("litellm:ollama/llama3:8b")
            .unwrap()
            .unwrap();
        assert_eq!(m.model, "ollama/llama3:8b");
        // Bare names are for an OpenAI-compatible base URL.
        assert_eq!(ModelRef::parse("gpt-4o-mini").unwrap(), None);
        assert_eq!(ModelRef::parse("llama3:8b").unwrap(), None);
        let e = "gpt-4o-mini".parse::<ModelRef>().unwrap_err();
        assert!(e.to_string().contains("anthropic, gemini, openai"), "{e}");
        let e = ModelRef::parse("gemini:").unwrap_err();
        assert!(e.to_string().contains("gemini:gemini-2.5-flash"), "{e}");
    }

    #[test]
    fn limits_come_from_the_longest_family() {
        let l = |s: &str| s.parse::<ModelRef>().unwrap().limits();
        assert_eq!(
            l("openai:gpt-4o-mini-2024-07-18"),
            Some(limits(128_000, 16_384))
        );
        assert_eq!(l("openai:gpt-4.1-mini"), Some(limits(1_047_576, 32_768)));
        assert_eq!(
            l("gemini:gemini-2.5-flash-lite"),
            Some(limits(1_048_576, 65_536))
        );
        assert_eq!(
            l("gemini:gemini-2.0-flash-001"),
            Some(limits(1_048_576, 8_192))
        );
        assert_eq!(
            l("anthropic:claude-sonnet-4-5-20250929"),
            Some(limits(200_000, 64_000))
        );
        assert_eq!(
            l("litellm:anthropic/claude-3-5-haiku-latest"),
            Some(limits(200_000, 8_192))
        );
        assert_eq!(l("openai:gpt-4.10"), None, "a family ends at a dash");
        assert_eq!(l("openai-chat:my-finetune"), None);
    }
}
