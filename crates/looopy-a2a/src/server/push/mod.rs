//! Push notifications: webhooks that receive a task's updates, for clients
//! that do not keep a stream open (A2A 1.0 §3.1.7–3.1.10, §4.3; 0.3
//! `tasks/pushNotificationConfig/*`).
//!
//! - `settings.rs`: how webhooks are called ([`PushSettings`]);
//! - `config.rs`: configs on the wire, both versions;
//! - `methods.rs`: the four methods and configs given with a message;
//! - `delivery.rs`: [`Push`], the configs' store and the HTTP client,
//!   following a turn's events and POSTing them, with retries and
//!   backoff, off the turn's path;
//! - `ssrf.rs`: which addresses a webhook may reach.
//!
//! This module only gathers what the server uses: each file names the
//! ones below it, none names this one.

mod config;
mod delivery;
mod methods;
mod settings;
mod ssrf;

pub(crate) use config::{
    ConfigInput, ConfigQuery, decode_create, decode_query, encode, encode_list,
};
pub(crate) use delivery::Push;
pub use delivery::TOKEN_HEADER as PUSH_TOKEN_HEADER;
pub(crate) use methods::{create, delete, get, inline, list, started};
pub use settings::PushSettings;
