//! The lines a turn's tool calls print, and their styles: shared by a
//! turn's own lines and a sub-agent's, which are indented further.

use std::io::Write;

use anstyle::{AnsiColor, Style};
use looopy_a2a::ToolProgress;
use looopy_core::ToolFailure;

/// A tool call's name.
const TOOL: Style = AnsiColor::Cyan.on_default();
/// Arguments, results, usage: secondary.
pub(super) const DIM: Style = Style::new().dimmed();
/// A call that worked.
pub(super) const OK: Style = AnsiColor::Green.on_default();
/// A call or a turn that failed.
pub(super) const BAD: Style = AnsiColor::Red.on_default();
/// A turn that stopped for another reason (canceled, waiting for input).
pub(super) const NOTE: Style = AnsiColor::Yellow.on_default();

/// The style of how a call ended.
fn outcome_style(how: &str) -> Style {
    if how == "ok" { OK } else { BAD }
}

/// `  → name args` (after `indent`).
pub(super) fn tool_start(err: &mut dyn Write, indent: &str, name: &str, arguments: &str) {
    let _ = writeln!(
        err,
        "{indent}{TOOL}→ {name}{TOOL:#} {DIM}{arguments}{DIM:#}"
    );
}

/// `  ← name (how, N ms): result` (after `indent`).
pub(super) fn tool_end(
    err: &mut dyn Write,
    indent: &str,
    name: &str,
    how: &str,
    ms: u64,
    result: &str,
) {
    let style = outcome_style(how);
    let _ = writeln!(
        err,
        "{indent}{TOOL}← {name}{TOOL:#} ({style}{how}{style:#}, {ms} ms): {DIM}{result}{DIM:#}"
    );
}

/// How a failed tool call is shown.
pub(super) fn failure_label(kind: ToolFailure) -> &'static str {
    match kind {
        ToolFailure::Timeout => "timed out",
        ToolFailure::Denied => "denied",
        ToolFailure::Cancelled => "cancelled",
        ToolFailure::UnknownTool => "unknown tool",
        ToolFailure::BadArguments => "bad arguments",
        ToolFailure::Panicked => "crashed",
        ToolFailure::Interrupted => "interrupted",
        _ => "error",
    }
}

/// Clips `text` to 200 characters, on one line.
pub(super) fn clip(text: &str) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() > 200 {
        one_line.chars().take(200).collect::<String>() + "…"
    } else {
        one_line
    }
}

/// Prints one update of the tool-progress extension after `indent`: tool
/// calls as they start and end (`super::print_progress` for a turn's own).
pub(super) fn print_progress_at(progress: &ToolProgress, indent: &str, err: &mut dyn Write) {
    match progress {
        ToolProgress::ToolStart {
            name, arguments, ..
        } => tool_start(err, indent, name, &clip(&arguments.to_string())),
        ToolProgress::ToolComplete {
            name,
            result,
            is_error,
            failure,
            duration_ms,
            ..
        } => {
            let how = match failure {
                Some(kind) => failure_label(*kind),
                None if *is_error => "error",
                None => "ok",
            };
            tool_end(err, indent, name, how, *duration_ms, &clip(result));
        }
        _ => {}
    }
}
