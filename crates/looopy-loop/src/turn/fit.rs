//! The context guard in a turn: what each request holds (the history, with
//! the turn's older rounds replaced by their summary once they were
//! compacted), and the check before every model call
//! (`docs/behaviour.md#the-context-guard`).

use std::sync::Arc;

use looopy_core::cuts::safe_cut_points_of;
use looopy_core::{History, LlmError, LlmRequest, Message, TurnEnd};

use super::Turn;
use super::ending::Ending;
use crate::context::{CONTEXT_LENGTH, ContextBudget, TurnSummary};

/// Makes a request's messages from what the turn sends (the wrap-up
/// flattens them; an iteration sends them as they are).
pub(super) type MakeMessages<'a> = &'a (dyn Fn(&History) -> History + Sync);

impl Turn {
    /// What the model is sent of the history: all of it, or, once the
    /// turn's older rounds were compacted, the messages before the turn,
    /// their summary and the rounds after them.
    pub(super) fn sent_history(&self) -> History {
        match &self.summary {
            None => self.history.clone(),
            Some(summary) => self.history_with(summary.message.clone(), summary.upto),
        }
    }

    /// The history before the turn, `summary`, then the turn's messages
    /// from `upto` on.
    fn history_with(&self, summary: Arc<Message>, upto: usize) -> History {
        let mut sent = History::new();
        for m in self.history.iter_from(0).take(self.turn_start) {
            sent.push_shared(m.clone());
        }
        sent.push_shared(summary);
        for m in self.history.iter_from(upto) {
            sent.push_shared(m.clone());
        }
        sent
    }

    /// Checks `request` against the model's context window before it is
    /// sent. Over it: with a compactor and `compact`, the turn's older
    /// rounds are summarised and `request` gets the shorter messages (made
    /// by `make`); otherwise, or when that is not enough, the ending that
    /// says so.
    pub(super) async fn fit(
        &mut self,
        request: &mut LlmRequest,
        make: MakeMessages<'_>,
        compact: bool,
    ) -> Result<(), Ending> {
        let guard = &self.parts.context;
        let Some(budget) = guard.budget(&self.config) else {
            return Ok(());
        };
        let estimate = guard.estimator.estimate(request);
        if estimate <= budget.limit() {
            return Ok(());
        }
        let Some(compactor) = guard.compactor.clone().filter(|_| compact) else {
            return Err(self.too_long(estimate, budget, None));
        };
        let Some(upto) = self.cut_for(request, make, budget) else {
            return Err(self.too_long(estimate, budget, None));
        };
        let from = self.summary.as_ref().map_or(self.turn_start, |s| s.upto);
        let mut old: Vec<Message> = Vec::with_capacity(upto - from + 1);
        if let Some(summary) = &self.summary {
            old.push((*summary.message).clone());
        }
        old.extend(
            self.history
                .iter_from(from)
                .take(upto - from)
                .map(|m| (**m).clone()),
        );
        let summarised = compactor
            .summarise(self.parts.llm.as_ref(), &old, &self.cx)
            .await;
        let message = match summarised {
            Ok(message) => Arc::new(message),
            Err(LlmError::Cancelled) => return Err(Ending::new(TurnEnd::Cancelled, None)),
            Err(e) => {
                tracing::warn!(error = %e, "the turn's older rounds could not be summarised");
                return Err(self.too_long(estimate, budget, Some(&e)));
            }
        };
        tracing::info!(
            summarised = old.len(),
            estimate,
            limit = budget.limit(),
            "the turn's older rounds were compacted to fit the context window"
        );
        self.summary = Some(TurnSummary { upto, message });
        request.messages = make(&self.sent_history());
        let after = self.parts.context.estimator.estimate(request);
        if after <= budget.limit() {
            return Ok(());
        }
        Err(self.too_long(after, budget, None))
    }

    /// Where to compact: the turn's messages before the returned position
    /// are summarised (with an earlier summary of the turn). The first
    /// safe cut after which the rest of the request takes at most three
    /// quarters of the limit (a quarter is left to the summary); the whole
    /// turn when none does. `None` when the turn has nothing to summarise.
    fn cut_for(
        &self,
        request: &LlmRequest,
        make: MakeMessages<'_>,
        budget: ContextBudget,
    ) -> Option<usize> {
        let from = self.summary.as_ref().map_or(self.turn_start, |s| s.upto);
        let n = self.history.len();
        if from >= n {
            return None;
        }
        let refs: Vec<&Message> = self.history.iter().collect();
        let safe = safe_cut_points_of(&refs);
        let target = budget.limit() / 4 * 3;
        let placeholder = Arc::new(Message::user(""));
        let estimator = &self.parts.context.estimator;
        let fits = (from + 1..n).filter(|&k| safe[k]).find(|&k| {
            let mut trial = request.clone();
            trial.messages = make(&self.history_with(placeholder.clone(), k));
            estimator.estimate(&trial) <= target
        });
        Some(fits.unwrap_or(n))
    }

    /// The ending of a turn whose next request would not fit: what it
    /// needs, what it may have, and what to change.
    fn too_long(&self, estimate: usize, budget: ContextBudget, error: Option<&LlmError>) -> Ending {
        let what = format!(
            "The next model request would need about {estimate} tokens, more than the {} \
             this turn may send (a context window of {} tokens, {} of them held back for \
             the answer), so it was not sent.",
            budget.limit(),
            budget.window,
            budget.reserve,
        );
        let change = match (error, self.parts.context.compactor.is_some()) {
            (Some(e), _) => format!(
                " Summarising the turn's earlier steps failed ({e}). Retry the turn, or make \
                 tool results shorter (the tool-output cache)."
            ),
            (None, true) => " Summarising the turn's earlier steps was not enough: shorten what \
                 the turn starts with (a smaller window, compaction before the turn), make tool \
                 results shorter (the tool-output cache), or use a model with a larger context \
                 window (`context_window_tokens`)."
                .to_owned(),
            (None, false) => " Turn compaction on (the Agent's `CompactionConfig`; \
                 `compact_after_messages` or `compact_after_tokens` under `[history]` in \
                 looopy.toml) so that a long turn is summarised as it goes, make tool results \
                 shorter (the tool-output cache), or use a model with a larger context window \
                 (`context_window_tokens`)."
                .to_owned(),
        };
        Ending::failed(what + &change, CONTEXT_LENGTH)
    }
}
