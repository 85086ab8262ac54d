//! Structured output: a typed final answer `T: Deserialize + JsonSchema`.
//!
//! [`StructuredOutput<T>`] derives a JSON schema from `T`, asks for it as the
//! request's [`ResponseFormat`] (an endpoint that enforces schemas gets it as
//! OpenAI's `response_format: {type: json_schema, strict: true}`; the
//! OpenAI-compatible provider configured without native support puts it
//! into the system prompt instead), then reads the answer into `T`. When the
//! answer does not read, the model is told what failed and asked again, at
//! most [`max_retries`](StructuredOutput::with_max_retries) times.
//!
//! - one model call: [`StructuredOutput::call`] on any [`LlmProvider`];
//! - a whole turn with tools: [`StructuredExt::run_structured`] (or
//!   [`StructuredOutput::run`]) on an [`AgentLoop`] built with the
//!   [`ResponseFormatLayer`], which puts the turn's format on every model
//!   call of the turn.

mod layer;
mod schema;

use std::marker::PhantomData;

use looopy_core::{
    History, LlmError, LlmProvider, LlmRequest, LlmResponse, Message, ResponseFormat, TaskState,
    TurnContext, Usage,
};
use looopy_loop::{AgentLoop, TurnOutcome};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

pub use layer::ResponseFormatLayer;
pub use schema::strict_schema;

/// How often a malformed answer is sent back by default.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// Asks a model for an answer of type `T` (see the [module](self) docs).
pub struct StructuredOutput<T> {
    format: ResponseFormat,
    max_retries: u32,
    _answer: PhantomData<fn() -> T>,
}

impl<T> Clone for StructuredOutput<T> {
    fn clone(&self) -> Self {
        StructuredOutput {
            format: self.format.clone(),
            max_retries: self.max_retries,
            _answer: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for StructuredOutput<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredOutput")
            .field("format", &self.format)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl<T: DeserializeOwned + JsonSchema> Default for StructuredOutput<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: DeserializeOwned + JsonSchema> StructuredOutput<T> {
    /// The format of `T` (named after it, strict when its schema allows it)
    /// and [`DEFAULT_MAX_RETRIES`].
    pub fn new() -> Self {
        let (schema, strict) = strict_schema(looopy_tools::schema_for::<T>());
        let name: String = T::schema_name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        StructuredOutput {
            format: ResponseFormat::new(name, schema).with_strict(strict),
            max_retries: DEFAULT_MAX_RETRIES,
            _answer: PhantomData,
        }
    }
}

impl<T: DeserializeOwned> StructuredOutput<T> {
    /// How many times a malformed answer is sent back (0: never).
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// The format sent with each request.
    pub fn response_format(&self) -> &ResponseFormat {
        &self.format
    }

    /// Reads an answer. A surrounding Markdown code fence is tolerated
    /// (models reached without native support often add one).
    pub fn parse(&self, text: &str) -> Result<T, ValidationError> {
        let mut de = serde_json::Deserializer::from_str(strip_fence(text));
        serde_path_to_error::deserialize(&mut de).map_err(|error| {
            let path = error.path().to_string();
            ValidationError {
                path,
                source: error.into_inner(),
            }
        })
    }

    /// The message that sends a malformed answer back to the model.
    pub fn correction(&self, error: &ValidationError) -> Message {
        Message::user(format!(
            "Your answer could not be read: {error}. Answer again with only a JSON value \
             that matches this JSON schema:\n{}",
            self.format.schema
        ))
    }

    /// One model call (plus retries) with `request`, whose
    /// `response_format` is set to this format.
    pub async fn call(
        &self,
        llm: &dyn LlmProvider,
        request: LlmRequest,
        cx: &TurnContext,
    ) -> Result<Structured<T>, StructuredError> {
        let mut request = LlmRequest {
            response_format: Some(self.format.clone()),
            ..request
        };
        let mut usage = Usage::default();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let response = llm.call(request.clone(), cx).await?;
            usage += response.usage.unwrap_or_default();
            match self.read(response.message.text(), attempt)? {
                Reading::Value(value) => {
                    return Ok(Structured {
                        value,
                        response,
                        attempts: attempt,
                        usage,
                    });
                }
                Reading::Retry(correction) => {
                    request.messages.push(response.message);
                    request.messages.push(correction);
                }
            }
        }
    }

    /// Reads the answer of attempt number `attempt`: its value, or the
    /// correction to send while retries are left; the last attempt's
    /// malformed answer is the error.
    fn read(&self, text: String, attempt: u32) -> Result<Reading<T>, StructuredError> {
        match self.parse(&text) {
            Ok(value) => Ok(Reading::Value(value)),
            Err(error) if attempt > self.max_retries => Err(StructuredError::Invalid {
                attempts: attempt,
                text,
                source: error,
            }),
            Err(error) => Ok(Reading::Retry(self.correction(&error))),
        }
    }

    /// A turn of `agent` whose final answer is read as `T`; a malformed one
    /// is answered with a correction and the turn goes on as another turn
    /// of the same task, on the history so far. The loop must have been
    /// built with the [`ResponseFormatLayer`] for the format to reach the
    /// model.
    pub async fn run(
        &self,
        agent: &AgentLoop,
        history: History,
        cx: TurnContext,
    ) -> Result<StructuredTurn<T>, StructuredError> {
        let cx = cx.with_response_format(self.format.clone());
        let mut history = history;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (_, outcome) = agent.start_turn(history, cx.clone()).collect_all().await;
            let outcome = outcome.ok_or(StructuredError::NoOutcome)?;
            let text = outcome.message.as_deref().map(Message::text);
            let text = match (outcome.state, text) {
                (TaskState::Completed, Some(text)) => text,
                (state, text) => {
                    return Err(StructuredError::TurnEnded {
                        state,
                        message: text.unwrap_or_default(),
                    });
                }
            };
            match self.read(text, attempt)? {
                Reading::Value(value) => {
                    return Ok(StructuredTurn {
                        value,
                        outcome,
                        attempts: attempt,
                    });
                }
                Reading::Retry(correction) => {
                    history = outcome.history;
                    history.push(correction);
                }
            }
        }
    }
}

/// What an answer read as `T` gave: the value, or a correction for the model.
enum Reading<T> {
    Value(T),
    Retry(Message),
}

/// `run_structured` on an [`AgentLoop`]: [`StructuredOutput::run`] with the
/// default retries.
pub trait StructuredExt {
    /// Runs a turn whose final answer is read as `T`.
    fn run_structured<T: DeserializeOwned + JsonSchema + Send>(
        &self,
        history: History,
        cx: TurnContext,
    ) -> impl Future<Output = Result<StructuredTurn<T>, StructuredError>> + Send;
}

impl StructuredExt for AgentLoop {
    async fn run_structured<T: DeserializeOwned + JsonSchema + Send>(
        &self,
        history: History,
        cx: TurnContext,
    ) -> Result<StructuredTurn<T>, StructuredError> {
        StructuredOutput::<T>::new().run(self, history, cx).await
    }
}

/// A typed answer from one model call.
#[derive(Debug, Clone)]
pub struct Structured<T> {
    /// The answer.
    pub value: T,
    /// The model's last response (the one that read).
    pub response: LlmResponse,
    /// Calls made (1 when the first answer read).
    pub attempts: u32,
    /// Tokens of every attempt.
    pub usage: Usage,
}

/// A typed answer from a turn.
#[derive(Debug, Clone)]
pub struct StructuredTurn<T> {
    /// The answer.
    pub value: T,
    /// How the last turn ended (its history holds every attempt).
    pub outcome: TurnOutcome,
    /// Turns run (1 when the first answer read).
    pub attempts: u32,
}

/// Why an answer did not read as the requested type.
#[derive(Debug, thiserror::Error)]
#[error("{}{source}", if path.is_empty() || path == "." { String::new() } else { format!("at `{path}`: ") })]
pub struct ValidationError {
    /// Where in the answer it failed (`.` for the top).
    pub path: String,
    /// What serde said.
    #[source]
    pub source: serde_json::Error,
}

/// A structured answer that could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredError {
    /// The model call failed.
    #[error("model call failed")]
    Llm(#[from] LlmError),
    /// The turn ended without an answer (failed, cancelled, waiting for input).
    #[error("the turn ended {state:?} without an answer: {message}")]
    TurnEnded {
        /// The state it ended in.
        state: TaskState,
        /// Its final message text.
        message: String,
    },
    /// The turn stream ended without an outcome.
    #[error("the turn ended without an outcome")]
    NoOutcome,
    /// The last answer still did not read.
    #[error("the answer did not match the schema after {attempts} attempts")]
    Invalid {
        /// Attempts made.
        attempts: u32,
        /// The last answer.
        text: String,
        /// What was wrong with it.
        #[source]
        source: ValidationError,
    },
}

/// The text inside a Markdown code fence, or all of it.
fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return t;
    };
    // Drop the info string (`json`) on the opening line.
    body.split_once('\n').map_or(body, |(_, b)| b).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, JsonSchema, PartialEq)]
    struct City {
        name: String,
        population: Option<u64>,
    }

    #[test]
    fn parse_reads_fenced_answers_and_names_the_failing_field() {
        let s = StructuredOutput::<City>::new();
        let c = s
            .parse("```json\n{\"name\":\"Oslo\",\"population\":null}\n```")
            .unwrap();
        assert_eq!(c.name, "Oslo");
        let e = s.parse(r#"{"name": 3}"#).unwrap_err();
        assert_eq!(e.path, "name");
        assert!(e.to_string().starts_with("at `name`: invalid type"), "{e}");
        assert_eq!(s.response_format().name, "City");
        assert!(s.response_format().strict);
    }
}
