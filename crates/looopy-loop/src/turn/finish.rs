//! How a turn ends once its body has decided the [`Ending`]: the wrap-up
//! answer at a limit, the `after_turn` hooks, and the outcome and final
//! event.

use std::sync::Arc;
use std::time::Instant;

use looopy_core::{History, LlmError, LlmResponse, Message, TurnEnd, TurnReport};

use super::Turn;
use super::ending::Ending;
use crate::hooks::HookPoints;
use crate::model_call;
use crate::stream::TurnOutcome;
use crate::wrap_up;

impl Turn {
    /// One last call without tools on a plain-text copy of the history
    /// (see `wrap_up`) plus a summary prompt; a fixed text if that fails.
    /// `end` is the limit that was reached (`MaxIterations` or
    /// `MaxToolCalls`).
    pub(super) async fn wrap_up(&mut self, end: TurnEnd) -> Ending {
        let config = self.config.clone();
        let (max, what) = match end {
            TurnEnd::MaxToolCalls => (config.max_tool_calls.unwrap_or(0), "tool calls"),
            _ => (config.max_iterations, "iterations"),
        };
        let message = format!(
            "The turn reached its limit of {max} {what} while the model was still calling \
             tools; one last call without tools writes the answer."
        );
        tracing::warn!(
            limit = end.as_str(),
            max,
            iterations = self.iteration,
            "{message}"
        );
        self.emit.limit_reached(end, max, self.iteration, &message);
        let flatten = |h: &History| wrap_up::plain_history(h, &config.final_summary_prompt);
        let messages = flatten(&self.sent_history());
        let mut request = model_call::request(&config, messages, Arc::from(Vec::new()), None);
        if let Err(ending) = self.fit(&mut request, &flatten, true).await {
            return ending;
        }
        let artifact_id = crate::events::response_artifact_id(&self.cx.task_id, None);
        let result = model_call::call_model(
            &self.parts,
            &self.config,
            request,
            &self.cx,
            &self.emit,
            self.iteration + 1,
            &artifact_id,
        )
        .await;
        let mut streamed = false;
        let answer = match result {
            Err(LlmError::Cancelled) => return Ending::new(TurnEnd::Cancelled, None),
            Ok(response) => {
                self.add_usage(response.usage);
                streamed = !response.message.text().is_empty();
                answer_text(response, &config.fallback_final_text)
            }
            Err(e) => {
                self.emit.llm_error(self.iteration + 1, &e);
                tracing::warn!(error = %e, "wrap-up call failed; answering with the fallback text");
                Message::assistant(config.fallback_final_text.to_string())
            }
        };
        let answer = Arc::new(answer);
        self.push(answer.clone());
        if streamed {
            self.note_streamed(artifact_id);
        }
        // The report says which limit it was (`maxIterationsReached` or
        // `maxToolCallsReached` on the wire).
        Ending::new(end, Some(answer))
    }

    /// An `after_turn` hook's final message: it replaces the ending's, and
    /// the turn's last message when that is the same one.
    fn replace_final(&mut self, ending: &mut Ending, mut message: Message) {
        let replaces_last = ending.message.as_ref().is_some_and(|old| {
            if ending.end == TurnEnd::InputRequired {
                message.tool_calls.clone_from(&old.tool_calls);
            }
            self.history.len() > self.turn_start
                && self
                    .history
                    .last_shared()
                    .is_some_and(|last| Arc::ptr_eq(last, old))
        });
        let message = Arc::new(message);
        if replaces_last {
            let mut history = History::new();
            for m in self.history.iter_from(0).take(self.history.len() - 1) {
                history.push_shared(m.clone());
            }
            self.history = history;
            self.push(message.clone());
        }
        ending.message = Some(message);
    }

    pub(super) async fn finish(&mut self, mut ending: Ending, started: Instant) {
        if self.parts.hooks.any_at(HookPoints::AFTER_TURN) {
            let mut summary = self.summary(ending.end, ending.message.as_deref());
            match self
                .parts
                .hooks
                .after_turn(&self.hook_cx(), &self.emit, &mut summary)
                .await
            {
                Ok(Some(message)) => self.replace_final(&mut ending, message),
                Ok(None) => {}
                Err(f) => ending = Ending::hook(f),
            }
        }
        let state = ending.end.state();
        // The final state is durable before the final event says so.
        self.checkpoint(state);
        self.writer.flush().await;
        self.shared.set_outcome(TurnOutcome {
            end: ending.end,
            state,
            message: ending.message.clone(),
            usage: self.usage,
            iterations: self.iteration,
            history: self.history.clone(),
            turn_start: self.turn_start,
        });
        self.emit.execution_end(
            ending.end,
            started.elapsed().as_millis() as u64,
            ending.error.as_ref().map(|e| e.message.clone()),
        );
        let report = TurnReport {
            finish_reason: ending.end,
            iterations: self.iteration,
            usage: self.usage,
            error: ending.error.map(Box::new),
            failed_tool_call: ending.failed_tool_call.map(Box::new),
            pending_tool_calls: ending.pending_tool_calls,
            approval_requests: ending.approval_requests,
            agent: None,
        };
        self.emit.final_status(ending.message, report);
    }
}

/// The wrap-up answer: the model's text without tool calls (a model that
/// sends some anyway must not leave unanswered calls in the history), or the
/// fallback when it said nothing.
fn answer_text(response: LlmResponse, fallback: &str) -> Message {
    let mut message = response.message;
    message.tool_calls.clear();
    if message.text().is_empty() {
        Message::assistant(fallback.to_owned())
    } else {
        message
    }
}
