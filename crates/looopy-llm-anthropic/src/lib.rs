#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod client;
mod config;
mod decode;
mod error;
mod provider;
mod stream;
mod wire;

pub use client::AnthropicProvider;
pub use config::{
    AnthropicConfig, ApiKey, DEFAULT_API_VERSION, DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS,
    ENV_API_KEY, ENV_BASE_URL, MIN_THINKING_BUDGET,
};
