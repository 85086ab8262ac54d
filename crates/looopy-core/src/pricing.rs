//! What model calls cost: the prices the vendors publish for their
//! well-known models ([`PriceTable::builtin`]), per million tokens, which
//! the user can override or extend ([`PriceTable::with_price`]), and
//! [`PriceTable::cost`], the cost of a call's (or a turn's) [`Usage`].
//!
//! Like the limits of [`crate::models`], this is data only, matched the
//! same way: a dated snapshot costs what its family costs
//! (`gpt-4.1-2025-04-14` is `gpt-4.1`), and a `litellm:` model is looked
//! up by its name after any `vendor/` prefix. A model the table does not
//! know has no cost ([`None`]), never a guessed one.
//!
//! Prices are in US dollars, as the vendors list them for standard
//! (not batch, not priority) requests, the lowest tier where a price
//! depends on the prompt's length.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::Usage;
use crate::models::{ModelRef, ProviderKind, family_lookup};

/// A model's prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// A prompt token.
    pub input: f64,
    /// A generated token (reasoning included).
    pub output: f64,
    /// A prompt token served from the provider's prompt cache; the input
    /// price when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// A prompt token written to the cache (Anthropic charges more for
    /// these); the input price when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Price {
    /// Input and output prices, cached input at the input price.
    pub const fn new(input: f64, output: f64) -> Self {
        Price {
            input,
            output,
            cached_input: None,
            cache_write: None,
        }
    }

    /// With the price of a cached prompt token.
    pub const fn with_cached_input(mut self, cached_input: f64) -> Self {
        self.cached_input = Some(cached_input);
        self
    }

    /// With the price of a prompt token written to the cache.
    pub const fn with_cache_write(mut self, cache_write: f64) -> Self {
        self.cache_write = Some(cache_write);
        self
    }

    /// What `usage` costs at these prices.
    pub fn cost(&self, usage: &Usage) -> Cost {
        let per_token = |per_million: f64, tokens: u64| per_million * tokens as f64 / 1e6;
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage
            .cache_creation_input_tokens
            .min(usage.input_tokens - cached);
        let plain = usage.input_tokens - cached - written;
        let input = per_token(self.input, plain)
            + per_token(self.cached_input.unwrap_or(self.input), cached)
            + per_token(self.cache_write.unwrap_or(self.input), written);
        Cost {
            input,
            output: per_token(self.output, usage.output_tokens),
        }
    }
}

/// What some usage cost, in US dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// The prompt tokens (cached and cache writes included).
    pub input: f64,
    /// The generated tokens.
    pub output: f64,
}

impl Cost {
    /// Input and output together.
    pub fn total(&self) -> f64 {
        self.input + self.output
    }
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, other: Cost) {
        self.input += other.input;
        self.output += other.output;
    }
}

/// The prices of models: the built-in table of well-known models, with the
/// user's prices over it.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    /// The user's prices, by provider and model (a family: a dated
    /// snapshot of it costs the same).
    overrides: HashMap<ProviderKind, Vec<(String, Price)>>,
}

impl PriceTable {
    /// The vendors' published prices of the models this crate knows.
    pub fn builtin() -> Self {
        PriceTable::default()
    }

    /// With `price` for `model` (and its dated snapshots), over the
    /// built-in price when there is one.
    pub fn with_price(mut self, model: ModelRef, price: Price) -> Self {
        let list = self.overrides.entry(model.provider).or_default();
        list.retain(|(name, _)| *name != model.model);
        list.push((model.model, price));
        self
    }

    /// The price of `model`: that of the longest family that names it,
    /// the user's or a built-in one (the user's where both name the same
    /// family); `None` for a model neither knows.
    pub fn price(&self, model: &ModelRef) -> Option<Price> {
        let builtin = builtin(model);
        let user = self.overrides.get(&model.provider).and_then(|list| {
            let table: Vec<(&str, Price)> = list.iter().map(|(n, p)| (n.as_str(), *p)).collect();
            family_lookup(&table, &model.model).map(|(family, p)| (family.len(), p))
        });
        match (user, builtin) {
            (Some((user_len, user)), Some((builtin_len, _))) if user_len >= builtin_len => {
                Some(user)
            }
            (_, Some((_, builtin))) => Some(builtin),
            (user, None) => user.map(|(_, p)| p),
        }
    }

    /// What `usage` of `model` costs; `None` when the model's price is
    /// unknown.
    pub fn cost(&self, model: &ModelRef, usage: &Usage) -> Option<Cost> {
        self.price(model).map(|price| price.cost(usage))
    }
}

/// The built-in price of `model`, with the length of the family it matched.
fn builtin(model: &ModelRef) -> Option<(usize, Price)> {
    let table = match model.provider {
        ProviderKind::Anthropic => ANTHROPIC,
        ProviderKind::Gemini => GEMINI,
        ProviderKind::OpenAi | ProviderKind::OpenAiChat => OPENAI,
        ProviderKind::LiteLlm => {
            let name = model.model.rsplit('/').next().unwrap_or(&model.model);
            return [ANTHROPIC, GEMINI, OPENAI]
                .into_iter()
                .find_map(|t| family_lookup(t, name))
                .map(|(family, p)| (family.len(), p));
        }
    };
    family_lookup(table, &model.model).map(|(family, p)| (family.len(), p))
}

/// Model families and their prices, from the vendors' pricing pages.
type Table = &'static [(&'static str, Price)];

/// Anthropic: cache reads at a tenth of the input price, five-minute cache
/// writes at 1.25 times it.
const fn anthropic(input: f64, output: f64) -> Price {
    Price::new(input, output)
        .with_cached_input(input / 10.0)
        .with_cache_write(input * 1.25)
}

const ANTHROPIC: Table = &[
    ("claude-opus-4-1", anthropic(15.0, 75.0)),
    ("claude-opus-4", anthropic(15.0, 75.0)),
    ("claude-sonnet-4-5", anthropic(3.0, 15.0)),
    ("claude-sonnet-4", anthropic(3.0, 15.0)),
    ("claude-haiku-4-5", anthropic(1.0, 5.0)),
    ("claude-3-7-sonnet", anthropic(3.0, 15.0)),
    ("claude-3-5-haiku", anthropic(0.8, 4.0)),
];

const GEMINI: Table = &[
    (
        "gemini-2.5-pro",
        Price::new(1.25, 10.0).with_cached_input(0.125),
    ),
    (
        "gemini-2.5-flash-lite",
        Price::new(0.10, 0.40).with_cached_input(0.01),
    ),
    (
        "gemini-2.5-flash",
        Price::new(0.30, 2.50).with_cached_input(0.03),
    ),
    ("gemini-2.0-flash-lite", Price::new(0.075, 0.30)),
    (
        "gemini-2.0-flash",
        Price::new(0.10, 0.40).with_cached_input(0.025),
    ),
];

const OPENAI: Table = &[
    ("gpt-5", Price::new(1.25, 10.0).with_cached_input(0.125)),
    ("gpt-5-mini", Price::new(0.25, 2.0).with_cached_input(0.025)),
    (
        "gpt-5-nano",
        Price::new(0.05, 0.40).with_cached_input(0.005),
    ),
    ("gpt-4.1", Price::new(2.0, 8.0).with_cached_input(0.5)),
    (
        "gpt-4.1-mini",
        Price::new(0.40, 1.60).with_cached_input(0.10),
    ),
    (
        "gpt-4.1-nano",
        Price::new(0.10, 0.40).with_cached_input(0.025),
    ),
    (
        "gpt-4o-mini",
        Price::new(0.15, 0.60).with_cached_input(0.075),
    ),
    ("gpt-4o", Price::new(2.50, 10.0).with_cached_input(1.25)),
    ("o4-mini", Price::new(1.10, 4.40).with_cached_input(0.275)),
    ("o3", Price::new(2.0, 8.0).with_cached_input(0.5)),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            cached_input_tokens: cached,
            ..Usage::default()
        }
    }

    fn model(text: &str) -> ModelRef {
        text.parse().unwrap()
    }

    #[test]
    fn known_models_cost_their_family_and_unknown_ones_nothing() {
        let table = PriceTable::builtin();
        // 1M prompt tokens of which 400k cached, 100k generated.
        let cost = table
            .cost(
                &model("openai:gpt-4.1-2025-04-14"),
                &usage(1_000_000, 400_000, 100_000),
            )
            .unwrap();
        assert!(
            (cost.input - (0.6 * 2.0 + 0.4 * 0.5)).abs() < 1e-9,
            "{cost:?}"
        );
        assert!((cost.output - 0.8).abs() < 1e-9, "{cost:?}");
        let mini = table.price(&model("openai-chat:gpt-4.1-mini")).unwrap();
        assert_eq!(mini.input, 0.40, "the longest family wins");
        assert!(
            table
                .price(&model("litellm:anthropic/claude-sonnet-4-5"))
                .is_some()
        );
        assert_eq!(
            table.cost(&model("openai:my-finetune"), &usage(10, 0, 10)),
            None
        );
        assert_eq!(table.price(&model("openai:gpt-4.10")), None);
    }

    #[test]
    fn the_users_prices_come_first_and_name_new_models() {
        let table = PriceTable::builtin()
            .with_price(model("openai:gpt-4.1"), Price::new(1.0, 1.0))
            .with_price(model("litellm:my-model"), Price::new(2.0, 4.0));
        let cost = table
            .cost(
                &model("openai:gpt-4.1-2025-04-14"),
                &usage(1_000_000, 0, 1_000_000),
            )
            .unwrap();
        assert_eq!(cost.total(), 2.0);
        // The override of gpt-4.1 does not reach gpt-4.1-mini's own price.
        assert_eq!(
            table.price(&model("openai:gpt-4.1-mini")).unwrap().input,
            0.40
        );
        let cost = table
            .cost(&model("litellm:my-model"), &usage(500_000, 0, 250_000))
            .unwrap();
        assert_eq!(cost.total(), 2.0);
    }

    #[test]
    fn cache_writes_and_reads_have_their_own_prices() {
        let price = PriceTable::builtin()
            .price(&model("anthropic:claude-sonnet-4-5-20250929"))
            .unwrap();
        let cost = price.cost(&Usage {
            input_tokens: 3_000_000,
            cached_input_tokens: 1_000_000,
            cache_creation_input_tokens: 1_000_000,
            ..Usage::default()
        });
        assert!((cost.input - (3.0 + 0.3 + 3.75)).abs() < 1e-9, "{cost:?}");
    }
}
