//! `looopy run "prompt"`: one turn in-process, streamed to the terminal.

use anyhow::{Result, bail};
use futures::StreamExt;
use looopy_core::{Message, TaskState};

use crate::app::App;
use crate::render::print_event;

/// Runs one turn of a new conversation; fails when the turn does not complete.
pub async fn run(app: &App, prompt: &str) -> Result<TaskState> {
    let context = uuid::Uuid::new_v4().to_string();
    let agent = app.agent(&context, "local")?;
    let mut turn = agent
        .execute_turn(Some(Message::user(prompt)), None)
        .await?;
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let mut state = None;
    while let Some(event) = turn.next().await {
        if let Some(s) = print_event(&event, &mut out, &mut err) {
            state = Some(s);
        }
    }
    match state {
        Some(s @ (TaskState::Completed | TaskState::InputRequired)) => Ok(s),
        Some(s) => bail!("the turn ended {}", s.as_str()),
        None => bail!("the turn ended without a final event"),
    }
}
