//! Local tools: Rust functions with a typed argument struct.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use looopy_core::{
    ToolCall, ToolDefinition, ToolError, ToolFailure, ToolProvider, ToolResult, TurnContext,
};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

type Handler = Arc<dyn Fn(ToolCall, TurnContext) -> BoxFuture<'static, ToolResult> + Send + Sync>;

struct LocalTool {
    definition: ToolDefinition,
    handler: Handler,
}

/// The argument type of a tool that takes no arguments: its schema is an
/// empty object and it accepts any object (or no arguments at all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, JsonSchema)]
pub struct NoArgs {}

/// A [`ToolProvider`] of Rust functions.
///
/// Each tool takes one argument struct (`Deserialize + JsonSchema`) and the
/// call's [`TurnContext`]; the parameters schema the model sees is generated
/// from the struct by `schemars` (inlined, without `$schema`). Arguments that
/// do not fit come back to the model as an error result naming the problem.
/// A return value is serialized to JSON text, except that a string stays plain
/// text; an `Err` becomes an error result with its message; a panic becomes an
/// error result and leaves the other tools untouched.
///
/// Registering a name twice replaces the earlier tool.
///
/// A tool is not idempotent unless declared so with
/// [`idempotent`](Self::idempotent) right after registering it (or, for a
/// [`raw_tool`](Self::raw_tool), with [`ToolDefinition::idempotent()`]): a turn
/// resumed after a crash runs an interrupted call again only for an
/// idempotent tool.
///
/// ```
/// use looopy_tools::{LocalTools, ToolFnError};
/// use looopy_core::TurnContext;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct AddArgs {
///     /// The first number.
///     a: f64,
///     /// The second number.
///     b: f64,
/// }
///
/// let tools = LocalTools::new()
///     .tool("add", "Adds two numbers", |args: AddArgs, _cx: TurnContext| async move {
///         Ok::<_, ToolFnError>(args.a + args.b)
///     })
///     .idempotent()
///     .sync_tool("negate", "Negates a number", |args: AddArgs, _cx: &TurnContext| {
///         Ok::<_, ToolFnError>(-args.a)
///     });
/// assert_eq!(tools.len(), 2);
/// ```
#[derive(Clone, Default)]
pub struct LocalTools {
    tools: Vec<Arc<LocalTool>>,
    /// Where the tool registered last is.
    last: Option<usize>,
}

impl fmt::Debug for LocalTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalTools")
            .field("tools", &self.names().collect::<Vec<_>>())
            .finish()
    }
}

impl LocalTools {
    /// No tools yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers an async tool.
    pub fn tool<A, R, E, F, Fut>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: Serialize + 'static,
        E: fmt::Display + 'static,
        F: Fn(A, TurnContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
    {
        let name = name.into();
        let definition = ToolDefinition::new(name, description, schema_for::<A>());
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |call: ToolCall, cx: TurnContext| {
            let f = Arc::clone(&f);
            let id = call.id.clone();
            let tool = call.name.clone();
            let run = async move {
                let args = match parse_arguments::<A>(&call) {
                    Ok(args) => args,
                    Err(error) => return ToolResult::from_error(call.id, &error),
                };
                finish(call.id, f(args, cx).await)
            };
            guard_panics(id, tool, run)
        });
        self.insert(definition, handler)
    }

    /// Registers a synchronous tool. It runs on the caller's task, so it
    /// should be quick: do blocking work in an async tool with
    /// `tokio::task::spawn_blocking`.
    pub fn sync_tool<A, R, E, F>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: Serialize + Send + 'static,
        E: fmt::Display + Send + 'static,
        F: Fn(A, &TurnContext) -> Result<R, E> + Send + Sync + 'static,
    {
        // An async tool whose future is ready at once: argument checks and
        // panic handling are the async path's.
        self.tool(name, description, move |args: A, cx: TurnContext| {
            std::future::ready(f(args, &cx))
        })
    }

    /// Registers a tool that takes the raw call and builds its own
    /// [`ToolResult`] (custom parts, signals, metadata). Panics are still
    /// turned into error results.
    pub fn raw_tool<F, Fut>(self, definition: ToolDefinition, f: F) -> Self
    where
        F: Fn(ToolCall, TurnContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |call: ToolCall, cx: TurnContext| {
            let id = call.id.clone();
            let tool = call.name.clone();
            let f = Arc::clone(&f);
            guard_panics(id, tool, async move { f(call, cx).await })
        });
        self.insert(definition, handler)
    }

    /// Declares the tool registered last idempotent: running the same call
    /// twice has the effect of running it once (it only reads, or it
    /// deduplicates by [`TurnContext::idempotency_key`]). A turn resumed
    /// after a crash runs an interrupted call of such a tool again; a call of
    /// any other tool is reported to the model as interrupted instead. Does
    /// nothing before the first tool.
    pub fn idempotent(mut self) -> Self {
        if let Some(tool) = self.last.and_then(|i| self.tools.get_mut(i)) {
            *tool = Arc::new(LocalTool {
                definition: tool.definition.clone().idempotent(true),
                handler: Arc::clone(&tool.handler),
            });
        }
        self
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools' names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.definition.name.as_str())
    }

    fn insert(mut self, definition: ToolDefinition, handler: Handler) -> Self {
        let tool = Arc::new(LocalTool {
            definition,
            handler,
        });
        match self
            .tools
            .iter()
            .position(|t| t.definition.name == tool.definition.name)
        {
            Some(i) => {
                self.tools[i] = tool;
                self.last = Some(i);
            }
            None => {
                self.tools.push(tool);
                self.last = Some(self.tools.len() - 1);
            }
        }
        self
    }
}

#[async_trait]
impl ToolProvider for LocalTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(self.tools.iter().map(|t| t.definition.clone()).collect())
    }

    /// Rust functions: the set is made when the provider is built.
    fn tools_are_fixed(&self) -> bool {
        true
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        let Some(tool) = self.tools.iter().find(|t| t.definition.name == call.name) else {
            let error = ToolError::UnknownTool {
                name: call.name.clone(),
            };
            return ToolResult::from_error(call.id.clone(), &error);
        };
        (tool.handler)(call.clone(), cx.clone()).await
    }
}

/// The JSON Schema of a tool's arguments, as the model should see it: all
/// subschemas inlined, no `$schema` key.
pub fn schema_for<A: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}

/// Reads a call's arguments into `A`. The error says which field was wrong
/// and how, for the model to read. Empty arguments read as `{}`.
pub fn parse_arguments<A: DeserializeOwned>(call: &ToolCall) -> Result<A, ToolError> {
    let text = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let message = if path == "." || path.is_empty() {
            inner.to_string()
        } else {
            format!("field `{path}`: {inner}")
        };
        ToolError::InvalidArguments {
            tool: call.name.clone(),
            message,
        }
    })
}

/// Turns a tool function's outcome into a result: strings stay plain text,
/// other values become JSON text, errors become error results.
fn finish<R: Serialize, E: fmt::Display>(id: String, outcome: Result<R, E>) -> ToolResult {
    match outcome {
        Ok(value) => match serde_json::to_value(&value) {
            Ok(Value::String(text)) => ToolResult::text(id, text),
            Ok(value) => ToolResult::json(id, &value),
            Err(error) => ToolResult::error(id, format!("could not serialize the result: {error}")),
        },
        Err(error) => ToolResult::error(id, error.to_string()),
    }
}

/// Runs `run`, turning a panic into an error result.
fn guard_panics(
    id: String,
    tool: String,
    run: impl Future<Output = ToolResult> + Send + 'static,
) -> BoxFuture<'static, ToolResult> {
    AssertUnwindSafe(run)
        .catch_unwind()
        .map(move |outcome| match outcome {
            Ok(result) => result,
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                tracing::error!(tool = %tool, "tool panicked: {message}");
                ToolResult::failed(
                    id,
                    ToolFailure::Panicked,
                    format!("tool '{tool}' panicked: {message}"),
                )
            }
        })
        .boxed()
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}
