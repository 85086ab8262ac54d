//! Warns when a conversation's history passes a configured size while
//! automatic compaction is off: the history then only grows, and so does
//! every request (the window bounds what is sent, not what is kept). The
//! limits are those of the [`CompactionConfig`] (`max_messages`,
//! `max_tokens`), so that turning `auto` on later compacts at the size
//! that was warned about.

use std::sync::atomic::{AtomicBool, Ordering};

use looopy_core::{EventPayload, History, HistoryLimit};

use crate::compaction::CompactionConfig;

/// Which limits have been warned about, so that each warns once per
/// passing (not at every turn past it).
#[derive(Debug, Default)]
pub(crate) struct SizeWarnings {
    messages: AtomicBool,
    tokens: AtomicBool,
}

impl SizeWarnings {
    /// The warnings `messages` call for now, each also logged. A limit the
    /// history is back under (after a compaction or a clear) may warn again.
    pub(crate) fn check(
        &self,
        config: &CompactionConfig,
        context_id: &str,
        history: &History,
    ) -> Vec<EventPayload> {
        if config.auto {
            return Vec::new();
        }
        let mut out = Vec::new();
        if let Some(max) = config.max_messages {
            let size = history.len();
            self.limit(
                &self.messages,
                HistoryLimit::Messages,
                max,
                size,
                context_id,
                &mut out,
            );
        }
        if let Some(max) = config.max_tokens {
            let size = config.tokens(&history.to_vec());
            self.limit(
                &self.tokens,
                HistoryLimit::Tokens,
                max,
                size,
                context_id,
                &mut out,
            );
        }
        out
    }

    fn limit(
        &self,
        warned: &AtomicBool,
        limit: HistoryLimit,
        threshold: usize,
        size: usize,
        context_id: &str,
        out: &mut Vec<EventPayload>,
    ) {
        if size <= threshold {
            warned.store(false, Ordering::Relaxed);
            return;
        }
        if warned.swap(true, Ordering::Relaxed) {
            return;
        }
        tracing::warn!(
            %context_id,
            limit = ?limit,
            threshold,
            size,
            "the conversation's history passed its configured size and automatic compaction is off; \
             turn compaction on (CompactionConfig::auto) or compact it (Agent::compact)"
        );
        out.push(EventPayload::HistorySize {
            limit,
            threshold,
            size,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use looopy_core::Message;

    fn history(n: usize) -> History {
        (0..n).map(|i| Message::user(format!("m{i}"))).collect()
    }

    #[test]
    fn each_limit_warns_once_per_passing_and_never_with_auto_compaction() {
        let config = CompactionConfig {
            auto: false,
            max_messages: Some(3),
            ..CompactionConfig::default()
        };
        let w = SizeWarnings::default();
        assert!(w.check(&config, "c", &history(3)).is_empty());
        let first = w.check(&config, "c", &history(4));
        assert_eq!(
            first,
            vec![EventPayload::HistorySize {
                limit: HistoryLimit::Messages,
                threshold: 3,
                size: 4
            }]
        );
        assert!(w.check(&config, "c", &history(6)).is_empty(), "once");
        assert!(w.check(&config, "c", &history(2)).is_empty());
        assert_eq!(w.check(&config, "c", &history(5)).len(), 1, "passed again");

        let auto = CompactionConfig::after_messages(3);
        assert!(
            SizeWarnings::default()
                .check(&auto, "c", &history(9))
                .is_empty()
        );
    }
}
