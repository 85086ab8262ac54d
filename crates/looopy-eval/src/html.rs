//! The HTML report of a run: one self-contained page (inline CSS and SVG
//! charts, no scripts, no external assets) with the pass rate, the
//! distributions of latency, tokens and cost, and each case's result.

use std::fmt::Write as _;

use crate::report::{RunReport, xml as escape};

/// Bins of a histogram.
const BINS: usize = 10;

impl RunReport {
    /// The report as one HTML page.
    pub fn html(&self) -> String {
        let mut out = String::new();
        let title = format!("Evaluation of {}", self.dataset);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>{}</h1>\n",
            escape(&title),
            escape(&title)
        );
        let _ = write!(
            out,
            "<p class=\"meta\">{}started {} · {:.1} s</p>",
            self.model
                .as_ref()
                .map_or(String::new(), |m| format!("model {} · ", escape(m))),
            escape(&self.started_at),
            self.seconds
        );
        let _ = write!(
            out,
            "<section aria-label=\"summary\" class=\"summary\">\
             <div><span class=\"n\" id=\"total\">{}</span> cases</div>\
             <div class=\"pass\"><span class=\"n\" id=\"passed\">{}</span> passed</div>\
             <div class=\"fail\"><span class=\"n\" id=\"failed\">{}</span> failed</div>\
             <div><span class=\"n\" id=\"pass-rate\">{:.0}%</span> pass rate</div>\
             </section>",
            self.cases.len(),
            self.passed(),
            self.failed(),
            self.pass_rate() * 100.0
        );
        out.push_str(&pass_bar(self.passed(), self.failed()));
        out.push_str("<section class=\"charts\" aria-label=\"distributions\">\n");
        let seconds: Vec<f64> = self.cases.iter().map(|c| c.seconds).collect();
        out.push_str(&histogram("Latency (s)", &seconds, 2));
        let tokens: Vec<f64> = self
            .cases
            .iter()
            .map(|c| c.usage.total_tokens as f64)
            .collect();
        out.push_str(&histogram("Tokens", &tokens, 0));
        let costs: Vec<f64> = self.cases.iter().filter_map(|c| c.cost).collect();
        if costs.is_empty() {
            out.push_str("<figure><figcaption>Cost ($)</figcaption><p>The model's price is unknown.</p></figure>\n");
        } else {
            out.push_str(&histogram("Cost ($)", &costs, 6));
        }
        out.push_str("</section>\n<h2>Cases</h2>\n<table>\n<thead><tr><th scope=\"col\">Result</th><th scope=\"col\">Case</th>\
             <th scope=\"col\">Seconds</th><th scope=\"col\">Iterations</th><th scope=\"col\">Tokens</th><th scope=\"col\">Cost ($)</th>\
             <th scope=\"col\">Checks</th><th scope=\"col\">Answer</th></tr></thead>\n<tbody>\n");
        for case in &self.cases {
            let mut checks = String::new();
            if let Some(error) = &case.error {
                let _ = write!(checks, "<li class=\"fail\">error: {}</li>", escape(error));
            }
            for check in &case.checks {
                let _ = write!(
                    checks,
                    "<li class=\"{}\">{} {}: {}</li>",
                    if check.passed { "pass" } else { "fail" },
                    if check.passed { "✓" } else { "✗" },
                    check.kind.as_str(),
                    escape(&check.detail)
                );
            }
            let _ = write!(
                out,
                "<tr class=\"case {cls}\" id=\"case-{id}\"><td class=\"{cls}\">{result}</td><th scope=\"row\">{name}</th>\
                 <td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td><ul>{checks}</ul></td>\
                 <td><details><summary>answer</summary><pre>{}</pre>\
                 <p class=\"record\">conversation <code>{}</code>, tasks {}</p></details></td></tr>",
                case.seconds,
                case.iterations,
                case.usage.total_tokens,
                case.cost.map_or("–".into(), |c| format!("{c:.6}")),
                escape(&case.answer),
                escape(&case.record.context_id),
                case.record
                    .task_ids
                    .iter()
                    .map(|t| format!("<code>{}</code>", escape(t)))
                    .collect::<Vec<_>>()
                    .join(", "),
                cls = if case.passed { "pass" } else { "fail" },
                result = if case.passed { "PASS" } else { "FAIL" },
                id = escape(&slug(&case.name)),
                name = escape(&case.name),
            );
        }
        out.push_str("</tbody>\n</table>\n</main>\n</body>\n</html>\n");
        out
    }
}

/// An id-safe form of a case's name.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The passed and failed shares as one stacked bar.
fn pass_bar(passed: usize, failed: usize) -> String {
    let total = (passed + failed).max(1) as f64;
    let width = 600.0;
    let pass_w = width * passed as f64 / total;
    format!(
        "<svg class=\"bar\" role=\"img\" aria-label=\"{passed} passed, {failed} failed\" viewBox=\"0 0 {width} 24\" width=\"{width}\" height=\"24\">\
         <rect x=\"0\" y=\"0\" width=\"{pass_w:.1}\" height=\"24\" fill=\"#2e7d32\"/>\
         <rect x=\"{pass_w:.1}\" y=\"0\" width=\"{:.1}\" height=\"24\" fill=\"#c62828\"/></svg>\n",
        width - pass_w
    )
}

/// A histogram of `values` as an inline SVG figure.
fn histogram(title: &str, values: &[f64], decimals: usize) -> String {
    let (w, h, pad) = (320.0, 160.0, 24.0);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut counts = [0usize; BINS];
    if values.is_empty() {
        return format!(
            "<figure><figcaption>{}</figcaption><p>No values.</p></figure>\n",
            escape(title)
        );
    }
    let span = (max - min).max(f64::EPSILON);
    for v in values {
        let bin = (((v - min) / span) * BINS as f64) as usize;
        counts[bin.min(BINS - 1)] += 1;
    }
    let highest = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let bar_w = (w - 2.0 * pad) / BINS as f64;
    let mut bars = String::new();
    for (i, count) in counts.iter().enumerate() {
        let bar_h = (h - 2.0 * pad) * *count as f64 / highest;
        let _ = write!(
            bars,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bar_h:.1}\" fill=\"#1565c0\"><title>{count}</title></rect>",
            pad + i as f64 * bar_w + 1.0,
            h - pad - bar_h,
            bar_w - 2.0
        );
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let p = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    format!(
        "<figure><figcaption>{}</figcaption>\
         <svg role=\"img\" aria-label=\"histogram of {}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\">{bars}\
         <line x1=\"{pad}\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\" stroke=\"#444\"/>\
         <text x=\"{pad}\" y=\"{ty}\" font-size=\"11\">{min:.decimals$}</text>\
         <text x=\"{x2}\" y=\"{ty}\" font-size=\"11\" text-anchor=\"end\">{max:.decimals$}</text></svg>\
         <p>mean {mean:.decimals$} · median {:.decimals$} · p90 {:.decimals$}</p></figure>\n",
        escape(title),
        escape(title),
        p(0.5),
        p(0.9),
        y = h - pad,
        x2 = w - pad,
        ty = h - 8.0,
    )
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fafafa}\
main{max-width:1200px;margin:0 auto;padding:1.5rem}\
.meta{color:#555}\
.summary{display:flex;gap:1rem;margin:1rem 0}\
.summary div{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.75rem 1rem}\
.summary .n{font-size:1.6rem;font-weight:600;display:block}\
.charts{display:flex;flex-wrap:wrap;gap:1rem}\
figure{background:#fff;border:1px solid #ddd;border-radius:6px;margin:0;padding:.5rem}\
figcaption{font-weight:600}\
table{border-collapse:collapse;width:100%;background:#fff}\
th,td{border:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}\
td.pass,li.pass,.summary .pass .n{color:#1b5e20}\
td.fail,li.fail,.summary .fail .n{color:#b71c1c}\
ul{margin:0;padding-left:1rem}\
pre{white-space:pre-wrap;max-width:40ch}";
