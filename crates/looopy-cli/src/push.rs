//! `[push]`: A2A push notifications (webhooks) of `looopy serve`.
//!
//! ```toml
//! [push]
//! enabled = true                  # off by default (the methods answer -32003)
//! allow_private_webhooks = false  # true: webhooks on loopback/private addresses too
//! max_attempts = 5                # per update, the first included
//! request_timeout_secs = 10       # one POST
//! ```

use std::time::Duration;

use anyhow::{Result, bail};
use looopy_a2a::PushSettings;
use serde::Deserialize;

/// `[push]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushSection {
    /// Whether the server sends push notifications.
    #[serde(default)]
    pub enabled: bool,
    /// Whether webhooks may be on non-public addresses (see `docs/a2a.md`).
    #[serde(default)]
    pub allow_private_webhooks: bool,
    /// Attempts per update.
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
    /// The limit of one POST, in seconds (fractions allowed).
    #[serde(default = "default_timeout")]
    pub request_timeout_secs: f64,
}

fn default_attempts() -> u32 {
    PushSettings::default().max_attempts
}

fn default_timeout() -> f64 {
    PushSettings::default().request_timeout.as_secs_f64()
}

impl Default for PushSection {
    fn default() -> Self {
        PushSection {
            enabled: false,
            allow_private_webhooks: false,
            max_attempts: default_attempts(),
            request_timeout_secs: default_timeout(),
        }
    }
}

impl PushSection {
    /// Fails on values out of range.
    pub fn validate(&self) -> Result<()> {
        if !(1..=100).contains(&self.max_attempts) {
            bail!(
                "[push] max_attempts must be between 1 and 100, not {}",
                self.max_attempts
            );
        }
        if !(0.01..=3_600.0).contains(&self.request_timeout_secs) {
            bail!(
                "[push] request_timeout_secs must be between 0.01 and 3600 seconds, not {}",
                self.request_timeout_secs
            );
        }
        Ok(())
    }

    /// The server's push settings, `None` when push is off.
    pub fn settings(&self) -> Option<PushSettings> {
        self.enabled.then(|| {
            PushSettings::default()
                .allow_private_webhooks(self.allow_private_webhooks)
                .max_attempts(self.max_attempts)
                .request_timeout(Duration::from_secs_f64(self.request_timeout_secs))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::config::Config;

    #[test]
    fn push_is_off_unless_enabled_and_checked() {
        assert!(Config::parse("").unwrap().push.settings().is_none());
        let c = Config::parse("[push]\nenabled = true\nallow_private_webhooks = true").unwrap();
        let settings = c.push.settings().unwrap();
        assert!(settings.allow_private_webhooks);
        assert_eq!(settings.max_attempts, 5);
        for bad in [
            "max_attempts = 0",
            "request_timeout_secs = 0",
            "retries = 3",
        ] {
            assert!(Config::parse(&format!("[push]\n{bad}")).is_err(), "{bad}");
        }
    }
}
