//! The prompt: rustyline (line editing, history) on a thread of its own,
//! since it blocks, asked for one line at a time so that it never reads
//! while a turn runs.

use std::sync::mpsc;
use std::thread;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tokio::sync::oneshot;

/// What the user did at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    /// A line (trimmed).
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D, or the end of piped input.
    Eof,
}

/// A request for a line: the prompt, and where to send the answer.
type Ask = (String, oneshot::Sender<Input>);

/// The editor's thread.
pub(crate) struct LineReader {
    asks: mpsc::Sender<Ask>,
}

impl LineReader {
    /// Starts the editor's thread. Line history lives in memory only.
    pub(crate) fn start() -> Result<Self, ReadlineError> {
        let mut editor = DefaultEditor::new()?;
        let (asks, requests) = mpsc::channel::<Ask>();
        // Not joined: when the session ends, the process ends with it.
        thread::spawn(move || {
            while let Ok((prompt, reply)) = requests.recv() {
                let input = match editor.readline(&prompt) {
                    Ok(line) => {
                        let line = line.trim().to_owned();
                        if !line.is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                        }
                        Input::Line(line)
                    }
                    Err(ReadlineError::Interrupted) => Input::Interrupted,
                    Err(_) => Input::Eof,
                };
                if reply.send(input).is_err() {
                    break;
                }
            }
        });
        Ok(LineReader { asks })
    }

    /// Reads one line.
    pub(crate) async fn read(&self, prompt: &str) -> Input {
        let (reply, answer) = oneshot::channel();
        if self.asks.send((prompt.to_owned(), reply)).is_err() {
            return Input::Eof;
        }
        answer.await.unwrap_or(Input::Eof)
    }
}
