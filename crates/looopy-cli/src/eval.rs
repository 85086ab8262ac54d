//! `looopy eval <cases>`: runs a dataset against the configured agent
//! (built by [`App`] as `looopy serve` builds it), with a progress bar on a
//! terminal, and writes the table, JUnit XML, JSON and HTML reports.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use looopy::eval::{Dataset, Evaluator, Progress, RunReport, compare};
use looopy::registry::{ModelOptions, build_model};
use looopy_core::models::ModelRef;
use looopy_core::pricing::PriceTable;

use crate::app::App;
use crate::config::Config;

/// The built-in prices with the configuration's `[pricing."provider:model"]`
/// tables over them.
pub fn price_table(config: &Config) -> Result<PriceTable> {
    config
        .pricing
        .iter()
        .try_fold(PriceTable::builtin(), |table, (name, price)| {
            let model: ModelRef = name.parse().with_context(|| {
                format!("[pricing.\"{name}\"]: the key is not `provider:model`")
            })?;
            Ok(table.with_price(model, *price))
        })
}

/// What `looopy eval` was asked.
#[derive(Debug, Clone)]
pub struct EvalArgs {
    /// The dataset file (`.toml` or `.jsonl`).
    pub cases: PathBuf,
    /// Cases run at once.
    pub concurrency: usize,
    /// Where to write JUnit XML.
    pub junit: Option<PathBuf>,
    /// Where to write the HTML report.
    pub html: Option<PathBuf>,
    /// Where to write the run as JSON.
    pub json: Option<PathBuf>,
    /// An earlier run's JSON to compare with.
    pub baseline: Option<PathBuf>,
}

/// Runs the dataset, prints the table (and the comparison with the
/// baseline), writes the files asked for; returns whether every case passed.
pub async fn eval(
    app: &App,
    args: &EvalArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<bool> {
    let dataset = Dataset::load(&args.cases)?;
    let baseline = match &args.baseline {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the baseline {}", path.display()))?;
            Some(RunReport::from_json(&text).with_context(|| {
                format!(
                    "{} is not a run written by `looopy eval --json`",
                    path.display()
                )
            })?)
        }
        None => None,
    };
    let template = app.agent_template()?;
    let mut evaluator =
        Evaluator::new(move |context: &str| template.agent_owned_by(context, "eval"))
            .concurrency(args.concurrency);
    if let Some(model) = app
        .config
        .llm
        .as_ref()
        .and_then(|l| l.model_ref().ok().flatten())
    {
        evaluator = evaluator.model(model, price_table(&app.config)?);
    }
    if let Some(judge) = &app.config.eval.judge {
        let model: ModelRef = judge
            .model
            .parse()
            .with_context(|| format!("[eval.judge] model: reading `{}`", judge.model))?;
        let llm = build_model(&model, &ModelOptions::new(), env)
            .with_context(|| format!("building the judge model {model}"))?;
        evaluator = evaluator.judge(llm);
    }
    let bar = Arc::new(ProgressLine::new(std::io::stderr().is_terminal()));
    let shown = bar.clone();
    let evaluator = evaluator.on_progress(move |p| shown.show(p));
    let report = evaluator.run(&dataset).await;
    bar.finish();
    print!("{}", report.table());
    if let Some(baseline) = &baseline {
        print!("{}", compare(baseline, &report));
    }
    let write = |path: &Option<PathBuf>, text: String| -> Result<()> {
        if let Some(path) = path {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    };
    write(&args.junit, report.junit())?;
    write(&args.html, report.html())?;
    write(&args.json, report.to_json())?;
    Ok(report.failed() == 0)
}

/// The progress of a run on stderr: a bar redrawn in place on a terminal,
/// a line per ended case otherwise.
struct ProgressLine {
    terminal: bool,
}

impl ProgressLine {
    fn new(terminal: bool) -> Self {
        ProgressLine { terminal }
    }

    fn show(&self, p: Progress<'_>) {
        let mut err = std::io::stderr().lock();
        let verdict = if p.case.passed { "pass" } else { "FAIL" };
        if self.terminal {
            let width = 30;
            let filled = width * p.done / p.total.max(1);
            let _ = write!(
                err,
                "\r\x1b[2K[{}{}] {}/{} {verdict} {}",
                "#".repeat(filled),
                " ".repeat(width - filled),
                p.done,
                p.total,
                p.case.name
            );
        } else {
            let _ = writeln!(
                err,
                "[{}/{}] {verdict} {} ({:.2} s)",
                p.done, p.total, p.case.name, p.case.seconds
            );
        }
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.terminal {
            let _ = writeln!(std::io::stderr());
        }
    }
}
