#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod config;
mod decode;
mod error;
mod provider;
mod wire;

pub use config::{
    DEFAULT_BASE_URL, ENV_GEMINI_API_KEY, ENV_GEMINI_BASE_URL, ENV_GOOGLE_API_KEY, GeminiApiKey,
    GeminiConfig,
};
pub use provider::GeminiProvider;
pub use wire::PROVIDER_NAME;
