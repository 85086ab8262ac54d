//! Datasets: the cases of an evaluation, read from TOML (`[[cases]]`
//! tables) or JSON Lines (one case object a line), with what each case's
//! answer and turn are expected to be.

use std::collections::BTreeMap;
use std::path::Path;

use looopy_core::ToolDefinition;
use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// Why a dataset could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The file could not be read.
    #[error("cannot read the dataset {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The TOML is not a dataset.
    #[error("the dataset is not valid TOML of `[[cases]]` tables")]
    Toml(#[source] toml::de::Error),
    /// A line of JSON Lines is not a case.
    #[error("line {line} of the dataset is not a case")]
    JsonLine {
        /// 1-based line number.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A case is not well formed (no input, a bad regex, a repeated name...).
    #[error("case {case:?}: {message}")]
    Case {
        /// The case's name.
        case: String,
        /// What is wrong, and what to write instead.
        message: String,
    },
    /// The dataset has no cases.
    #[error("the dataset has no cases")]
    Empty,
}

/// The cases of an evaluation, in the order the file lists them.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// A name for reports (the file's stem when read from a file).
    pub name: String,
    /// The cases, each checked when read.
    pub cases: Vec<Case>,
}

/// One case: what the agent is asked, and what its answer and turn are
/// expected to be.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A unique name, the case's identity across runs (`--baseline`).
    pub name: String,
    /// One user message; give this or [`turns`](Self::turns).
    #[serde(default)]
    pub input: Option<String>,
    /// A scripted multi-turn exchange: each user message in order, each
    /// sent once the agent has answered the one before. The expectations
    /// are about the last answer and the whole exchange (its tool calls,
    /// iterations, tokens, cost and time).
    #[serde(default)]
    pub turns: Vec<String>,
    /// Client tools the user's client declares for every turn of the
    /// case: the model may call them, and the turn then waits for the
    /// client's result.
    #[serde(default)]
    pub tools: Vec<ToolDefinition>,
    /// The results the client answers its tools' calls with, by tool
    /// name: a call of a tool listed here is answered and the turn goes
    /// on; a call of one that is not leaves the turn waiting (the case's
    /// answer is then the turn's `input-required` message).
    #[serde(default)]
    pub tool_results: BTreeMap<String, Value>,
    /// What is expected.
    #[serde(default)]
    pub expect: Expect,
}

/// What a case expects; every expectation given must hold for the case to
/// pass (a case with none passes when its turns complete).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Texts the answer contains (each, case-sensitively).
    #[serde(default, deserialize_with = "one_or_many")]
    pub contains: Vec<String>,
    /// Texts the answer does not contain.
    #[serde(default, deserialize_with = "one_or_many")]
    pub not_contains: Vec<String>,
    /// A regular expression (Rust `regex` syntax) the answer matches
    /// somewhere; anchor it with `^` and `$` to match the whole answer.
    #[serde(default)]
    pub regex: Option<String>,
    /// A JSON Schema the answer, read as JSON, is valid against (a
    /// fenced ```` ```json ```` block is read from inside its fence).
    #[serde(default)]
    pub json_schema: Option<Value>,
    /// Tool calls that were, or were not, made.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallExpectation>,
    /// At most this many loop iterations over all the case's turns.
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// At most this many tokens (input and output) over all turns.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// At most this cost in US dollars, from the price table; fails when
    /// the model's price is unknown.
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// At most this many seconds of wall time for the whole case.
    #[serde(default)]
    pub max_seconds: Option<f64>,
    /// A rubric for the judge model: it reads the question, the answer and
    /// this, and says whether the answer meets it.
    #[serde(default)]
    pub judge: Option<String>,
}

/// A tool call a case expects to see (or not).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallExpectation {
    /// The tool's name.
    pub name: String,
    /// A pattern the call's arguments match: an object matches when each
    /// of its keys is in the arguments with a matching value (other keys
    /// are allowed); a string is a regular expression the whole string
    /// value matches; any other value must be equal. Without it, any call
    /// of the tool matches.
    #[serde(default)]
    pub args: Option<Value>,
    /// `false`: no call of the tool matches (default `true`: at least one does).
    #[serde(default = "yes")]
    pub called: bool,
}

fn yes() -> bool {
    true
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlDataset {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    cases: Vec<Case>,
}

impl Dataset {
    /// Reads a dataset file: JSON Lines when its name ends in `.jsonl`,
    /// TOML otherwise.
    pub fn load(path: &Path) -> Result<Dataset, DatasetError> {
        let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "eval".into());
        if path.extension().is_some_and(|e| e == "jsonl") {
            Dataset::from_jsonl(&stem, &text)
        } else {
            Dataset::from_toml(&stem, &text)
        }
    }

    /// Reads TOML: `[[cases]]` tables, and an optional top-level `name`
    /// (over `default_name`).
    pub fn from_toml(default_name: &str, text: &str) -> Result<Dataset, DatasetError> {
        let parsed: TomlDataset = toml::from_str(text).map_err(DatasetError::Toml)?;
        Dataset::new(
            parsed.name.unwrap_or_else(|| default_name.into()),
            parsed.cases,
        )
    }

    /// Reads JSON Lines: one case object a line (blank lines skipped).
    pub fn from_jsonl(name: &str, text: &str) -> Result<Dataset, DatasetError> {
        let cases = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(i, line)| {
                serde_json::from_str(line).map_err(|source| DatasetError::JsonLine {
                    line: i + 1,
                    source,
                })
            })
            .collect::<Result<Vec<Case>, _>>()?;
        Dataset::new(name.into(), cases)
    }

    /// A dataset of `cases`, each checked: an input, a unique name,
    /// regular expressions that compile.
    pub fn new(name: String, cases: Vec<Case>) -> Result<Dataset, DatasetError> {
        if cases.is_empty() {
            return Err(DatasetError::Empty);
        }
        let mut seen = std::collections::HashSet::new();
        for case in &cases {
            case.check()?;
            if !seen.insert(case.name.as_str()) {
                return Err(
                    case.error("another case has the same name: names identify cases across runs")
                );
            }
        }
        Ok(Dataset { name, cases })
    }
}

impl Case {
    /// The user messages, in order.
    pub fn messages(&self) -> Vec<&str> {
        match &self.input {
            Some(input) => vec![input.as_str()],
            None => self.turns.iter().map(String::as_str).collect(),
        }
    }

    fn error(&self, message: impl Into<String>) -> DatasetError {
        DatasetError::Case {
            case: self.name.clone(),
            message: message.into(),
        }
    }

    fn check(&self) -> Result<(), DatasetError> {
        if self.name.trim().is_empty() {
            return Err(self.error("the name is empty"));
        }
        match (&self.input, self.turns.is_empty()) {
            (Some(_), false) => return Err(self.error("give `input` or `turns`, not both")),
            (None, true) => {
                return Err(self.error("no input: give `input = \"...\"` or `turns = [...]`"));
            }
            _ => {}
        }
        if let Some(re) = &self.expect.regex {
            Regex::new(re)
                .map_err(|e| self.error(format!("expect.regex does not compile: {e}")))?;
        }
        for call in &self.expect.tool_calls {
            if let Some(args) = &call.args {
                check_pattern(args).map_err(|e| {
                    self.error(format!(
                        "expect.tool_calls ({}): a pattern does not compile: {e}",
                        call.name
                    ))
                })?;
            }
        }
        Ok(())
    }
}

/// Compiles a pattern's strings, as [`args_match`] reads them.
fn check_pattern(pattern: &Value) -> Result<(), regex::Error> {
    match pattern {
        Value::String(s) => full_regex(s).map(|_| ()),
        Value::Object(map) => map.values().try_for_each(check_pattern),
        Value::Array(items) => items.iter().try_for_each(check_pattern),
        _ => Ok(()),
    }
}

fn full_regex(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!("^(?:{pattern})$"))
}

/// Whether `value` matches `pattern` ([`ToolCallExpectation::args`]).
pub(crate) fn args_match(pattern: &Value, value: &Value) -> bool {
    match (pattern, value) {
        (Value::String(p), Value::String(v)) => full_regex(p).is_ok_and(|re| re.is_match(v)),
        (Value::String(p), other @ (Value::Number(_) | Value::Bool(_))) => {
            full_regex(p).is_ok_and(|re| re.is_match(&other.to_string()))
        }
        (Value::Object(p), Value::Object(v)) => p
            .iter()
            .all(|(k, pv)| v.get(k).is_some_and(|vv| args_match(pv, vv))),
        (Value::Array(p), Value::Array(v)) => {
            p.len() == v.len() && p.iter().zip(v).all(|(pv, vv)| args_match(pv, vv))
        }
        (p, v) => p == v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn toml_and_jsonl_read_the_same_cases_and_bad_ones_are_named() {
        let toml = r#"
            [[cases]]
            name = "weather"
            input = "What is the weather in Paris?"
            [cases.expect]
            contains = "18 degrees"
            tool_calls = [{ name = "get_weather", args = { city = "Par.*" } }]
        "#;
        let d = Dataset::from_toml("d", toml).unwrap();
        assert_eq!(d.cases[0].expect.contains, ["18 degrees"]);
        let jsonl = r#"{"name": "weather", "input": "hi", "expect": {"contains": ["a", "b"]}}"#;
        let d = Dataset::from_jsonl("d", jsonl).unwrap();
        assert_eq!(d.cases[0].expect.contains, ["a", "b"]);

        let e = Dataset::from_toml("d", "[[cases]]\nname = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("no input"), "{e}");
        let e = Dataset::from_jsonl(
            "d",
            "{\"name\":\"x\",\"input\":\"a\",\"expect\":{\"regex\":\"(\"}}",
        )
        .unwrap_err();
        assert!(e.to_string().contains("regex does not compile"), "{e}");
        let e = Dataset::from_jsonl(
            "d",
            "{\"name\":\"x\",\"input\":\"a\"}\n{\"name\":\"x\",\"input\":\"b\"}",
        )
        .unwrap_err();
        assert!(e.to_string().contains("same name"), "{e}");
        let e = Dataset::from_jsonl("d", "{\"name\":\"x\",\"inptu\":\"a\"}").unwrap_err();
        assert!(matches!(e, DatasetError::JsonLine { line: 1, .. }), "{e}");
    }

    #[test]
    fn argument_patterns_match_keys_by_regex_and_ignore_others() {
        let args = json!({"city": "Paris", "unit": "celsius", "days": 3});
        assert!(args_match(&json!({"city": "Par.*"}), &args));
        assert!(args_match(&json!({"days": 3}), &args));
        assert!(args_match(&json!({"days": "[0-9]"}), &args));
        assert!(!args_match(&json!({"city": "Lyon"}), &args));
        assert!(
            !args_match(&json!({"city": "Pa"}), &args),
            "the whole value matches"
        );
        assert!(!args_match(&json!({"country": ".*"}), &args));
    }
}
