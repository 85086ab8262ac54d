//! `looopy chat URL`: an interactive A2A client. Each line is a message in
//! one conversation; the answer streams as it arrives, with the tool calls
//! and the tokens used (the client activates the tool-progress extension).
//!
//! Keys: the usual line editing and history (↑/↓) at the prompt; Ctrl-C
//! during a turn cancels it, a second Ctrl-C leaves; at the prompt Ctrl-C
//! or Ctrl-D (or `/quit`, or an empty line) leaves. A turn that waits for
//! the approval of tool calls asks y/n for each, and one whose tool asked a
//! question asks for its fields one by one; the answers go back as the next
//! message. `@server:uri` in a line attaches that resource of one of the
//! agent's MCP servers, and `/prompt server:name key=value ...` starts from
//! one of their prompts: both go by reference, filled in by the server
//! before each model call.

mod approval;
mod elicit;
mod input;
mod refs;
mod turn;

use anyhow::{Context, Result};
use looopy_a2a::{
    A2aClient, A2aClientError, EXTENSIONS_HEADER, SendRequest, TOOL_PROGRESS_EXTENSION,
};

use self::input::{Input, LineReader};
use self::turn::{Conversation, Followed, follow};

/// Talks to the agent at `url` until the user leaves. Errors: the agent
/// cannot be reached or refuses the credentials; a failed turn is shown and
/// the session goes on.
pub async fn chat(url: &str, token: Option<String>) -> Result<()> {
    let has_token = token.is_some();
    let mut builder = A2aClient::builder(url).header(EXTENSIONS_HEADER, TOOL_PROGRESS_EXTENSION);
    if let Some(t) = token {
        builder = builder.bearer_token(t);
    }
    let client = builder.build();
    let card = client
        .discover()
        .await
        .with_context(|| format!("cannot reach the agent at {url}"))?;
    eprintln!(
        "connected to {} — {} (Ctrl-C stops a turn; Ctrl-D, /quit or an empty line leaves)",
        card.name, card.description
    );
    let reader = LineReader::start().context("starting the line editor")?;
    let mut conversation = Conversation::default();
    loop {
        let approvals = std::mem::take(&mut conversation.approvals);
        let questions = std::mem::take(&mut conversation.questions);
        let request = if approvals.is_empty() && questions.is_empty() {
            None
        } else {
            let mut parts = Vec::new();
            if !approvals.is_empty() {
                match approval::ask(&reader, &approvals).await {
                    Some(message) => parts.extend(message.parts),
                    None => break,
                }
            }
            if !questions.is_empty() {
                match elicit::ask(&reader, &questions).await {
                    Some(message) => parts.extend(message.parts),
                    None => break,
                }
            }
            let message = looopy_core::Message::with_parts(looopy_core::Role::User, parts);
            Some(SendRequest::new(message))
        };
        let mut request = match request {
            Some(request) => request,
            None => match next_line(&reader).await {
                Some(line) => match refs::message_of(&line) {
                    Ok(message) => SendRequest::new(message),
                    Err(usage) => {
                        eprintln!("looopy: {usage}");
                        continue;
                    }
                },
                None => break,
            },
        };
        request.context_id.clone_from(&conversation.context_id);
        request.task_id = conversation.waiting_task.take();
        let stream = match client.stream(&request).await {
            Ok(s) => s,
            Err(A2aClientError::Http { status: 401, .. }) => {
                // Nothing will work without the right token: say so and stop.
                if has_token {
                    anyhow::bail!("the agent at {url} refused the token (--token or LOOOPY_TOKEN)");
                }
                anyhow::bail!("the agent at {url} wants a token: pass --token or set LOOOPY_TOKEN");
            }
            Err(e) => {
                eprintln!("looopy: not sent: {e}");
                continue;
            }
        };
        if follow(&client, stream, &mut conversation).await == Followed::Quit {
            break;
        }
    }
    Ok(())
}

/// The next line to send; `None` when the user leaves (Ctrl-C or Ctrl-D at
/// the prompt, `/quit`, an empty line).
async fn next_line(reader: &LineReader) -> Option<String> {
    let line = tokio::select! {
        input = reader.read("> ") => match input {
            Input::Line(line) => line,
            Input::Interrupted | Input::Eof => return None,
        },
        // Piped input: Ctrl-C reaches the process, not the editor.
        _ = tokio::signal::ctrl_c() => return None,
    };
    (!line.is_empty() && line != "/quit").then_some(line)
}
