//! `looopy run "prompt"`: one turn in-process, streamed to the terminal.

use futures::StreamExt;
use looopy_core::{EventPayload, Message, TaskState};

use crate::app::App;
use crate::render::{ArtifactTexts, print_event};

/// Why `looopy run` did not complete its turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The Agent could not be built or the turn not started.
    #[error(transparent)]
    Agent(#[from] looopy_agent::AgentError),
    /// The turn ended other than completed (or waiting for input).
    #[error("the turn {}{}", state.as_str(), if message.is_empty() { String::new() } else { format!(": {message}") })]
    Ended {
        /// How it ended.
        state: TaskState,
        /// The final status's message (why), possibly empty.
        message: String,
    },
    /// No model is configured: the turn could only fail.
    #[error("{}", crate::app::NO_MODEL)]
    NoModel,
    /// The turn's events stopped before its final status.
    #[error("the turn ended without a final status")]
    NoFinalStatus,
}

/// Runs one turn of a new conversation; fails when the turn does not
/// complete, with the final status's message (printed once, by the caller).
pub async fn run(app: &App, prompt: &str) -> Result<TaskState, RunError> {
    // Said before anything runs: a turn would fail with the same words, less directly.
    if !crate::banner::has_model(&app.config) {
        return Err(RunError::NoModel);
    }
    let context = uuid::Uuid::new_v4().to_string();
    let agent = app.agent(&context, "local")?;
    let mut turn = agent
        .execute_turn(Some(Message::user(prompt)), None)
        .await?;
    let (mut out, mut err) = (std::io::stdout(), anstream::stderr());
    let mut shown = ArtifactTexts::default();
    while let Some(event) = turn.next().await {
        if let EventPayload::StatusUpdate {
            status,
            is_final: true,
            ..
        } = &*event.payload
        {
            return match status.state {
                s @ (TaskState::Completed | TaskState::InputRequired) => {
                    if let Some(m) = status
                        .message
                        .as_ref()
                        .filter(|_| s == TaskState::InputRequired)
                    {
                        println!("{}", m.text());
                    }
                    Ok(s)
                }
                state => Err(RunError::Ended {
                    state,
                    message: status
                        .message
                        .as_ref()
                        .map(|m| m.text())
                        .unwrap_or_default(),
                }),
            };
        }
        print_event(&event, &mut shown, &mut out, &mut err);
    }
    Err(RunError::NoFinalStatus)
}
