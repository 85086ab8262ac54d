//! Following one turn's stream on the terminal: the answer as it streams,
//! tool calls from the tool-progress extension (with the progress of the
//! agents they call, indented under them), token usage and the trace id
//! (when the server records traces) at the end.
//! Ctrl-C cancels the turn (`CancelTask`), a second one quits; a stream
//! that breaks before the turn's end is resumed with `SubscribeToTask`
//! from the last event seen, so nothing is lost or shown twice.

use std::io::Write;
use std::time::Duration;

use futures::StreamExt;
use looopy_a2a::{A2aClient, A2aClientError, A2aStream, StreamEvent, ToolProgress};
use looopy_core::approval::ApprovalRequest;
use looopy_core::elicitation::ElicitationRequest;
use looopy_core::{EventPayload, TaskState, TaskStatus, Usage};

use crate::render::{
    ArtifactTexts, SubAgents, print_event, print_progress, progress_data, usage_line,
};

/// How many times a broken stream is resumed before the turn is given up.
const MAX_RESUMES: u32 = 3;

/// How a turn's following ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Followed {
    /// The turn ended in this state (`None`: unknown, the stream was lost).
    Ended(Option<TaskState>),
    /// The user pressed Ctrl-C twice: leave the session.
    Quit,
}

/// What the session keeps between turns.
#[derive(Debug, Default)]
pub(crate) struct Conversation {
    /// The conversation's `contextId` once the server gave one.
    pub(crate) context_id: Option<String>,
    /// The task waiting for the user's answer (`input-required`).
    pub(crate) waiting_task: Option<String>,
    /// The tool calls of that task waiting for the user's approval.
    pub(crate) approvals: Vec<ApprovalRequest>,
    /// The questions its tools asked.
    pub(crate) questions: Vec<ElicitationRequest>,
}

/// One turn as it is followed.
#[derive(Debug, Default)]
struct Turn {
    task_id: Option<String>,
    last_event_id: Option<String>,
    state: Option<TaskState>,
    usage: Option<Usage>,
    /// The turn's OpenTelemetry trace id, when the server records one.
    trace_id: Option<String>,
    /// Ctrl-C came before the task's id: cancel once it is known.
    cancel_pending: bool,
    /// What was printed of the turn's artifacts.
    shown: ArtifactTexts,
    /// What was shown of the agents its tools called.
    sub_agents: SubAgents,
}

impl Turn {
    /// Shows one item; true when it ends the turn.
    fn show(&mut self, event: StreamEvent, conversation: &mut Conversation) -> bool {
        let (mut out, mut err) = (std::io::stdout(), anstream::stderr());
        match event {
            StreamEvent::Task(t) => {
                self.task_id = Some(t.id.clone());
                conversation.context_id = Some(t.context_id.clone());
                if t.status.state.is_terminal() {
                    // A turn that ended while the stream was down: its answer
                    // (or why it failed) comes whole with the task.
                    let text = t.answer_text();
                    if t.status.state != TaskState::Completed {
                        let _ = writeln!(err, "[{}] {text}", t.status.state.as_str());
                    } else if self.shown.is_empty() {
                        if !text.is_empty() {
                            println!("{text}");
                        }
                    } else if let Some(rest) = text.strip_prefix(&self.shown.text())
                        && !rest.is_empty()
                    {
                        // The stream broke in the middle of the answer.
                        println!("{rest}");
                    }
                    self.state = Some(t.status.state);
                    return true;
                }
            }
            StreamEvent::Message(m) => {
                println!("{}", m.message.text());
                if let Some(c) = m.context_id {
                    conversation.context_id = Some(c);
                }
                self.state = Some(TaskState::Completed);
                return true;
            }
            StreamEvent::Update(event) => {
                conversation.context_id = Some(event.context_id.to_string());
                self.task_id = Some(event.task_id.to_string());
                if let Some(progress) = progress_data(&event) {
                    match &progress {
                        ToolProgress::Usage { total, .. } => self.usage = Some(*total),
                        // A made-up id (tracing off on the server) finds nothing.
                        ToolProgress::TurnStart {
                            trace_id,
                            trace_id_generated: false,
                        } => self.trace_id = Some(trace_id.clone()),
                        ToolProgress::SubAgent {
                            call_id, update, ..
                        } => {
                            self.sub_agents.show(call_id, update, &mut err);
                            return false;
                        }
                        _ => {}
                    }
                    print_progress(&progress, &mut err);
                    return false;
                }
                if let EventPayload::StatusUpdate { metadata, .. } = &*event.payload
                    && let Some(report) = &metadata.report
                {
                    self.usage = Some(report.usage);
                }
                if let Some(state) = print_event(&event, &mut self.shown, &mut out, &mut err) {
                    self.state = Some(state);
                    if state == TaskState::InputRequired {
                        // The next line answers this task.
                        conversation.waiting_task = Some(event.task_id.to_string());
                        if let EventPayload::StatusUpdate {
                            status:
                                TaskStatus {
                                    message: Some(message),
                                    ..
                                },
                            ..
                        } = &*event.payload
                        {
                            conversation.approvals = ApprovalRequest::in_message(message);
                            conversation.questions = ElicitationRequest::in_message(message);
                        }
                    }
                    return true;
                }
            }
            // An event kind newer than this code: nothing to show.
            _ => {}
        }
        false
    }

    async fn cancel(&mut self, client: &A2aClient) {
        let Some(task) = &self.task_id else {
            self.cancel_pending = true;
            return;
        };
        self.cancel_pending = false;
        if let Err(e) = client.cancel_task(task).await {
            eprintln!("looopy: could not cancel: {e}");
        }
    }
}

/// Follows a turn's `stream` to its end.
pub(crate) async fn follow(
    client: &A2aClient,
    mut stream: A2aStream,
    conversation: &mut Conversation,
) -> Followed {
    let mut turn = Turn::default();
    let mut interrupts = 0u32;
    let mut resumes = 0u32;
    let mut sigint = Box::pin(tokio::signal::ctrl_c());
    loop {
        let broken: Option<String> = tokio::select! {
            item = stream.next() => match item {
                Some(Ok(item)) => {
                    if item.id.is_some() {
                        turn.last_event_id = item.id;
                    }
                    let ended = turn.show(item.event, conversation);
                    if turn.cancel_pending {
                        turn.cancel(client).await;
                    }
                    if ended {
                        break;
                    }
                    None
                }
                Some(Err(e)) => Some(e.to_string()),
                None => Some("the server closed the stream before the turn's end".into()),
            },
            _ = &mut sigint => {
                interrupts += 1;
                if interrupts >= 2 {
                    return Followed::Quit;
                }
                eprintln!("(stopping the turn; Ctrl-C again to leave)");
                turn.cancel(client).await;
                sigint = Box::pin(tokio::signal::ctrl_c());
                None
            }
        };
        let Some(why) = broken else { continue };
        match resume(client, &turn, &mut resumes, &why).await {
            Some(s) => stream = s,
            None => return Followed::Ended(None),
        }
    }
    let mut facts: Vec<String> = turn
        .usage
        .as_ref()
        .and_then(usage_line)
        .into_iter()
        .collect();
    if let Some(id) = &turn.trace_id {
        facts.push(format!("trace {id}"));
    }
    if !facts.is_empty() {
        let dim = anstyle::Style::new().dimmed();
        anstream::eprintln!("  {dim}{}{dim:#}", facts.join(" · "));
    }
    Followed::Ended(turn.state)
}

/// A new stream of the turn from its last event, after `why` broke the
/// last one; `None` when it cannot be had (then the session goes on).
async fn resume(
    client: &A2aClient,
    turn: &Turn,
    resumes: &mut u32,
    why: &str,
) -> Option<A2aStream> {
    let Some(task) = &turn.task_id else {
        eprintln!("looopy: lost the connection before the turn started: {why}");
        return None;
    };
    let mut last: Option<A2aClientError> = None;
    while *resumes < MAX_RESUMES {
        *resumes += 1;
        eprintln!("(connection lost: {why}; resubscribing)");
        tokio::time::sleep(Duration::from_millis(200 * u64::from(*resumes))).await;
        match client
            .resubscribe(task, turn.last_event_id.as_deref())
            .await
        {
            Ok(stream) => return Some(stream),
            Err(e) => last = Some(e),
        }
    }
    match last {
        Some(e) => eprintln!("looopy: lost the turn (task {task}): {e}"),
        None => eprintln!("looopy: lost the turn (task {task}): {why}"),
    }
    None
}
