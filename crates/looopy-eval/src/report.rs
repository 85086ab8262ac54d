//! What a run found: [`RunReport`] (written and read back as JSON), each
//! case's [`CaseResult`] and its [`Check`]s, the terminal table, JUnit XML,
//! and [`compare`], two runs case by case.

use std::fmt::Write as _;

use looopy_core::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of the JSON a [`RunReport`] is written as.
pub const REPORT_FORMAT: u32 = 1;

/// One run of a dataset.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// [`REPORT_FORMAT`] when written.
    pub format: u32,
    /// The dataset's name.
    pub dataset: String,
    /// The model under test (`provider:model`), when known.
    #[serde(default)]
    pub model: Option<String>,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// Seconds from the start to the last case's end.
    pub seconds: f64,
    /// Each case's result, in the dataset's order.
    pub cases: Vec<CaseResult>,
}

/// What one case did and whether it passed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// Every check held and the case ran to its end.
    pub passed: bool,
    /// Each expectation, checked.
    pub checks: Vec<Check>,
    /// Why the case could not run to its end (the agent could not be
    /// built, a turn failed, the judge could not answer); `None` when it did.
    #[serde(default)]
    pub error: Option<String>,
    /// The last answer.
    pub answer: String,
    /// The state the last turn ended in (`completed`, `input-required`, `failed`...).
    #[serde(default)]
    pub state: Option<String>,
    /// Loop iterations over all the case's turns.
    pub iterations: u32,
    /// Tokens over all the case's turns.
    pub usage: Usage,
    /// The cost of those tokens in US dollars; `None` when the model's
    /// price is unknown.
    #[serde(default)]
    pub cost: Option<f64>,
    /// Wall time of the whole case.
    pub seconds: f64,
    /// The tool calls the model made, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallSeen>,
    /// Where the case's turns can be found again.
    pub record: RecordRef,
}

/// A tool call as the case saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallSeen {
    /// The tool.
    pub name: String,
    /// The arguments (a string when the model sent no JSON).
    pub arguments: Value,
}

/// Where the turns of a case are: its conversation and the task of each
/// turn. This is the seam to the execution records: a report links a
/// case to the record and timeline of each of its tasks through these
/// ids, once the agent keeps records.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordRef {
    /// The conversation the case ran in.
    pub context_id: String,
    /// The task id of each turn, in order.
    pub task_ids: Vec<String>,
}

/// What a check was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CheckKind {
    /// The answer contains a text.
    Contains,
    /// The answer does not contain a text.
    NotContains,
    /// The answer matches a regular expression.
    Regex,
    /// The answer is valid against a JSON Schema.
    JsonSchema,
    /// A tool was called with matching arguments.
    ToolCalled,
    /// No call of a tool matched.
    ToolNotCalled,
    /// At most N iterations.
    MaxIterations,
    /// At most N tokens.
    MaxTokens,
    /// At most a cost.
    MaxCost,
    /// At most N seconds.
    MaxSeconds,
    /// The judge model's verdict on a rubric.
    Judge,
}

impl CheckKind {
    /// The name reports use (`contains`, `tool_called`...).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::Contains => "contains",
            CheckKind::NotContains => "not_contains",
            CheckKind::Regex => "regex",
            CheckKind::JsonSchema => "json_schema",
            CheckKind::ToolCalled => "tool_called",
            CheckKind::ToolNotCalled => "tool_not_called",
            CheckKind::MaxIterations => "max_iterations",
            CheckKind::MaxTokens => "max_tokens",
            CheckKind::MaxCost => "max_cost",
            CheckKind::MaxSeconds => "max_seconds",
            CheckKind::Judge => "judge",
        }
    }
}

/// One expectation, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What it was about.
    pub kind: CheckKind,
    /// Whether it held.
    pub passed: bool,
    /// What was expected and what was found, for a person.
    pub detail: String,
}

impl RunReport {
    /// Cases that passed.
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed).count()
    }

    /// Cases that did not.
    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed()
    }

    /// The share of cases that passed, 0 to 1.
    pub fn pass_rate(&self) -> f64 {
        if self.cases.is_empty() {
            0.0
        } else {
            self.passed() as f64 / self.cases.len() as f64
        }
    }

    /// Reads a run written by [`to_json`](Self::to_json).
    pub fn from_json(text: &str) -> Result<RunReport, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The run as JSON (what `--json` writes and `--baseline` reads).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// A table for the terminal: a line per case, then the totals.
    pub fn table(&self) -> String {
        let width = self
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<6} {:<width$} {:>8} {:>5} {:>8} {:>10}  failed checks",
            "result", "case", "seconds", "iter", "tokens", "cost $"
        );
        for case in &self.cases {
            let failed: Vec<String> = case
                .error
                .iter()
                .cloned()
                .chain(
                    case.checks
                        .iter()
                        .filter(|c| !c.passed)
                        .map(|c| format!("{}: {}", c.kind.as_str(), c.detail)),
                )
                .collect();
            let _ = writeln!(
                out,
                "{:<6} {:<width$} {:>8.2} {:>5} {:>8} {:>10}  {}",
                if case.passed { "PASS" } else { "FAIL" },
                case.name,
                case.seconds,
                case.iterations,
                case.usage.total_tokens,
                case.cost.map_or("-".into(), |c| format!("{c:.6}")),
                failed.join("; ")
            );
        }
        let _ = writeln!(
            out,
            "{} passed, {} failed of {} ({:.0}%) in {:.1} s",
            self.passed(),
            self.failed(),
            self.cases.len(),
            self.pass_rate() * 100.0,
            self.seconds
        );
        out
    }

    /// The run as JUnit XML: one `<testsuite>` of the dataset, a
    /// `<testcase>` per case, a `<failure>` per failed check and an
    /// `<error>` for a case that could not run to its end.
    pub fn junit(&self) -> String {
        let errors = self.cases.iter().filter(|c| c.error.is_some()).count();
        let failures = self
            .cases
            .iter()
            .filter(|c| !c.passed && c.error.is_none())
            .count();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let suite = xml(&self.dataset);
        let _ = writeln!(
            out,
            "<testsuites name=\"looopy eval\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{:.3}\">",
            self.cases.len(),
            self.seconds
        );
        let timestamp = self.started_at.get(..19).unwrap_or(&self.started_at);
        let _ = writeln!(
            out,
            "  <testsuite name=\"{suite}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{:.3}\" timestamp=\"{}\">",
            self.cases.len(),
            self.seconds,
            xml(timestamp)
        );
        if let Some(model) = &self.model {
            let _ = writeln!(
                out,
                "    <properties><property name=\"model\" value=\"{}\"/></properties>",
                xml(model)
            );
        }
        for case in &self.cases {
            let _ = write!(
                out,
                "    <testcase name=\"{}\" classname=\"{suite}\" time=\"{:.3}\">",
                xml(&case.name),
                case.seconds
            );
            if let Some(error) = &case.error {
                let _ = write!(
                    out,
                    "\n      <error message=\"{}\" type=\"error\">{}</error>",
                    xml(error),
                    xml(error)
                );
            }
            for check in case.checks.iter().filter(|c| !c.passed) {
                let _ = write!(
                    out,
                    "\n      <failure message=\"{}\" type=\"{}\">{}</failure>",
                    xml(&check.detail),
                    check.kind.as_str(),
                    xml(&check.detail)
                );
            }
            let _ = writeln!(
                out,
                "\n      <system-out>{}</system-out>\n    </testcase>",
                xml(&case.answer)
            );
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

/// `text` escaped for XML (and HTML) text and attributes, without the
/// characters XML 1.0 cannot hold.
pub(crate) fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

/// Two runs of the same dataset, case by case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Cases that passed in the baseline and fail now.
    pub newly_failing: Vec<String>,
    /// Cases that failed in the baseline and pass now.
    pub newly_passing: Vec<String>,
    /// Cases whose outcome is the same but whose answer, checks or tool
    /// calls differ, with what changed.
    pub changed: Vec<(String, Vec<String>)>,
    /// Cases only the current run has.
    pub added: Vec<String>,
    /// Cases only the baseline has.
    pub removed: Vec<String>,
}

/// Compares `current` with `baseline`, case by case (by name).
pub fn compare(baseline: &RunReport, current: &RunReport) -> Comparison {
    let mut out = Comparison::default();
    for case in &current.cases {
        let Some(before) = baseline.cases.iter().find(|b| b.name == case.name) else {
            out.added.push(case.name.clone());
            continue;
        };
        match (before.passed, case.passed) {
            (true, false) => out.newly_failing.push(case.name.clone()),
            (false, true) => out.newly_passing.push(case.name.clone()),
            _ => {
                let mut what = Vec::new();
                if before.answer != case.answer {
                    what.push(format!("answer: {:?} -> {:?}", before.answer, case.answer));
                }
                let outcomes = |c: &CaseResult| -> Vec<(CheckKind, bool)> {
                    c.checks.iter().map(|k| (k.kind, k.passed)).collect()
                };
                if outcomes(before) != outcomes(case) {
                    what.push("checks".into());
                }
                let names = |c: &CaseResult| -> Vec<String> {
                    c.tool_calls.iter().map(|t| t.name.clone()).collect()
                };
                if before.tool_calls != case.tool_calls {
                    what.push(format!(
                        "tool calls: {:?} -> {:?}",
                        names(before),
                        names(case)
                    ));
                }
                if !what.is_empty() {
                    out.changed.push((case.name.clone(), what));
                }
            }
        }
    }
    for before in &baseline.cases {
        if !current.cases.iter().any(|c| c.name == before.name) {
            out.removed.push(before.name.clone());
        }
    }
    out
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "against the baseline: {} newly failing, {} newly passing, {} changed, {} added, {} removed",
            self.newly_failing.len(),
            self.newly_passing.len(),
            self.changed.len(),
            self.added.len(),
            self.removed.len()
        )?;
        for name in &self.newly_failing {
            writeln!(f, "  newly failing: {name}")?;
        }
        for name in &self.newly_passing {
            writeln!(f, "  newly passing: {name}")?;
        }
        for (name, what) in &self.changed {
            writeln!(f, "  changed: {name} ({})", what.join("; "))?;
        }
        for name in &self.added {
            writeln!(f, "  added: {name}")?;
        }
        for name in &self.removed {
            writeln!(f, "  removed: {name}")?;
        }
        Ok(())
    }
}
