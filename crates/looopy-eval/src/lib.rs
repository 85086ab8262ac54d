#![forbid(unsafe_code)]
//! Evaluation of Looopy agents: a [`Dataset`] of cases, each an input (one
//! message or a scripted exchange, with optional client tools) and what is
//! expected of the answer and the turn (texts, a regular expression, a JSON
//! Schema, tool calls, limits on iterations, tokens, cost and time, a
//! rubric for a judge model); an [`Evaluator`] that runs the cases against
//! an Agent, several at once; and the [`RunReport`] it returns, shown as a
//! terminal table, JUnit XML, JSON and a self-contained HTML page, and
//! compared with an earlier run ([`compare`]). [`replay`] runs a recorded
//! turn again with the current configuration and says what changed.
//!
//! ```no_run
//! # async fn example(template: looopy_agent::AgentTemplate) -> Result<(), Box<dyn std::error::Error>> {
//! use looopy_eval::{Dataset, Evaluator};
//!
//! let dataset = Dataset::load("evals/support.toml".as_ref())?;
//! let report = Evaluator::new(move |context: &str| template.agent(context))
//!     .concurrency(8)
//!     .run(&dataset)
//!     .await;
//! println!("{}", report.table());
//! assert_eq!(report.failed(), 0);
//! # Ok(())
//! # }
//! ```
//!
//! The guide is `docs/evaluation.md`.

pub mod dataset;
mod html;
pub mod replay;
pub mod report;
pub mod run;
pub mod schema;

pub use dataset::{Case, Dataset, DatasetError, Expect, ToolCallExpectation};
pub use replay::{ReplayError, ReplayOptions, ReplayReport, replay};
pub use report::{
    CaseResult, Check, CheckKind, Comparison, RecordRef, RunReport, ToolCallSeen, compare,
};
pub use run::{AgentSource, Evaluator, Progress};
