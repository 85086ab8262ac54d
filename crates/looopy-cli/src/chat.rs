//! `looopy chat URL`: an interactive A2A client. Each line is a message in
//! one conversation; the answer streams as it arrives.

use std::io::Write;

use anyhow::Result;
use futures::StreamExt;
use looopy_a2a::{A2aClient, SendRequest, StreamEvent};
use looopy_core::TaskState;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::render::print_event;

/// Reads lines from stdin until EOF (or `/quit`), sending each to the agent.
pub async fn chat(url: &str, token: Option<String>) -> Result<()> {
    let mut builder = A2aClient::builder(url);
    if let Some(t) = token {
        builder = builder.bearer_token(t);
    }
    let client = builder.build();
    let card = client.discover().await?;
    eprintln!(
        "connected to {} — {} (empty line or /quit to leave)",
        card.name, card.description
    );
    let mut context_id: Option<String> = None;
    let mut task_id: Option<String> = None;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        eprint!("> ");
        let _ = std::io::stderr().flush();
        let Some(line) = lines.next_line().await? else {
            break;
        };
        let line = line.trim();
        if line.is_empty() || line == "/quit" {
            break;
        }
        let mut request = SendRequest::text(line);
        request.context_id.clone_from(&context_id);
        request.task_id = task_id.take();
        let mut stream = client.stream(&request).await?;
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        while let Some(item) = stream.next().await {
            match item?.event {
                StreamEvent::Task(t) => {
                    context_id = Some(t.context_id.clone());
                }
                StreamEvent::Message(m) => {
                    println!("{}", m.message.text());
                }
                StreamEvent::Update(event) => {
                    context_id = Some(event.context_id.to_string());
                    if print_event(&event, &mut out, &mut err) == Some(TaskState::InputRequired) {
                        // The next line answers this task.
                        task_id = Some(event.task_id.to_string());
                    }
                }
            }
        }
    }
    Ok(())
}
