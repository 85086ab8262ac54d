#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod client;
mod config;
mod decode;
mod error;
#[cfg(feature = "otel")]
mod otel;
mod provider;
mod responses;
mod responses_decode;
mod stream;
mod tools_json;
mod wire;

pub use client::LiteLlmProvider;
pub use config::{ApiKey, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, LiteLlmConfig};
pub use responses::OpenAiResponsesProvider;
