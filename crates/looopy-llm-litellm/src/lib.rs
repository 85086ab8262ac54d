#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod client;
mod config;
mod decode;
mod error;
#[cfg(feature = "otel")]
mod otel;
mod retry;
mod stream;
mod wire;

pub use client::LiteLlmProvider;
pub use config::{ApiKey, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, LiteLlmConfig};
pub use retry::{RetryPolicy, RetryingLlm};
