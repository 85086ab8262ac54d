//! The integration tests of `looopy-agent`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../approval.rs"]
mod approval;
#[path = "../artifact_tools.rs"]
mod artifact_tools;
#[path = "../artifacts.rs"]
mod artifacts;
#[path = "../auth.rs"]
mod auth;
#[path = "../busy.rs"]
mod busy;
#[path = "../checkpoints.rs"]
mod checkpoints;
#[path = "../client_tools.rs"]
mod client_tools;
#[path = "../compaction.rs"]
mod compaction;
#[path = "../defaults.rs"]
mod defaults;
#[path = "../deps.rs"]
mod deps;
#[path = "../done_tool.rs"]
mod done_tool;
#[path = "../elicitation.rs"]
mod elicitation;
#[path = "../failure.rs"]
mod failure;
#[path = "../lifecycle.rs"]
mod lifecycle;
#[path = "../limits.rs"]
mod limits;
#[path = "../reader_task.rs"]
mod reader_task;
#[path = "../records.rs"]
mod records;
#[path = "../recovery.rs"]
mod recovery;
#[path = "../redis_resumed_answer.rs"]
mod redis_resumed_answer;
#[path = "../redis_turn_artifacts.rs"]
mod redis_turn_artifacts;
#[path = "../redis_turns.rs"]
mod redis_turns;
#[path = "../shutdown.rs"]
mod shutdown;
#[path = "../size_warning.rs"]
mod size_warning;
#[path = "../spans.rs"]
mod spans;
#[path = "../stores_bundle.rs"]
mod stores_bundle;
#[path = "../support/mod.rs"]
mod support;
#[path = "../task_records.rs"]
mod task_records;
#[path = "../template.rs"]
mod template;
#[path = "../tokens.rs"]
mod tokens;
#[path = "../tool_failures.rs"]
mod tool_failures;
#[path = "../turn_artifacts.rs"]
mod turn_artifacts;
#[path = "../window.rs"]
mod window;
