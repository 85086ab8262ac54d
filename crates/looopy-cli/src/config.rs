//! `looopy.toml`: one file that names the agent, its model, its tools, its
//! store and who may call it. Every section is optional; the defaults run an
//! agent on the memory store with no model (turns then fail with a message
//! saying how to configure one).
//!
//! ```toml
//! [agent]
//! name = "helper"
//! description = "Answers questions"
//! system_prompt = "You are helpful."
//! max_iterations = 10
//! tool_timeout_secs = 30      # every tool call; per tool: [agent.tool_timeouts]
//! max_tool_calls = 40         # per turn, then the turn wraps up (default: none)
//! max_turn_secs = 300         # per turn, then it ends failed (default: none)
//! tool_failure_mode = "continue"  # or "fail": the first failed tool call ends the turn
//! artifact_tools = false      # true: the model may create, append to and replace artifacts
//! approve_tools = ["delete_file"]  # calls of these tools wait for a person's approval
//!
//! [agent.tool_timeouts]       # seconds, by tool name (0: no limit)
//! slow_report = 120
//!
//! [[agent.skills]]            # listed on the agent card; each is a tool of `looopy mcp`
//! id = "summarise"            # the MCP tool's name: letters, digits, `_` and `-`, at most 64
//! name = "Summarise"          # default: the id
//! description = "Summarises a document in five lines"
//! tags = ["text"]
//! examples = ["Summarise this release note"]
//!
//! [llm]                       # LOOOPY_LLM_BASE_URL / _MODEL / _API_KEY override these
//! base_url = "http://localhost:4000/v1"
//! model = "gpt-4o-mini"
//! api_key_env = "LITELLM_API_KEY"
//! # or a provider's model, with its vendor's variables (GEMINI_API_KEY...):
//! # model = "gemini:gemini-2.5-flash"   # openai:gpt-4.1, openai-chat:gpt-4o-mini, litellm:...
//! # fallback = ["openai:gpt-4.1-mini"]  # tried in order when the model is overloaded or down
//!
//! [llm.gemini]                # options of the gemini: provider
//! thinking_budget_tokens = 1024
//!
//! [llm.anthropic]             # options of the anthropic: provider
//! thinking_budget_tokens = 2048
//! prompt_cache = true
//!
//! [[tools.mcp]]
//! name = "files"
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "./files"]
//! sampling = "allowed"        # the server may ask the agent's model (default "off";
//!                             # "ask": each request waits for a person's approval)
//! sampling_max_tokens = 1024  # the most tokens one of its requests may ask for
//! roots = [{ uri = "file:///srv/files", name = "files" }]  # answered to roots/list
//! elicitation = "ask"         # its questions end the turn input-required (default), or "off"
//! elicitation_timeout_secs = 900  # how long a call waits here for the answer
//!
//! [[tools.mcp]]
//! name = "search"
//! url = "https://search.example.com/mcp"   # streamable HTTP
//! headers = { "X-Team" = "support" }      # sent with every request
//! headers_env = { "X-Api-Key" = "SEARCH_API_KEY" }  # values from the environment
//! # token_env = "SEARCH_TOKEN"             # or a bearer token from the environment,
//! # or OAuth client credentials (the authorization server is found from the
//! # server's protected-resource metadata; feature `mcp-oauth`, on by default):
//! # oauth = { client_id = "looopy", client_secret_env = "SEARCH_CLIENT_SECRET", scopes = ["search"] }
//!
//! [[tools.a2a]]
//! name = "researcher"
//! url = "http://localhost:9000"
//!
//! [store]
//! backend = "redis"           # or "memory" (the default), which takes
//!                             # task_ttl_secs (86400), ttl_secs (0: forever)
//!                             # and max_entries (10000, least recently used out)
//! url = "redis://127.0.0.1:6379"
//! # A Redis Cluster instead of one server: some of its nodes (`rediss://`
//! # needs the `tls` feature of looopy-stores-redis).
//! # cluster_urls = ["redis://10.0.0.5:7000", "redis://10.0.0.6:7000"]
//! # Or PostgreSQL: backend = "postgres", url = "postgres://user@host/db",
//! # pool_size = 8 (docs/stores.md lists its keys).
//!
//! [server]
//! bind = "127.0.0.1:8080"
//! card_default_version = "1.0"  # the card a version-less request gets ("0.3" for old clients)
//!
//! [history]                   # what the model is sent of a conversation (0: no limit)
//! window_messages = 50        # the last 50 messages; a tool call travels with its results
//! window_tokens = 0           # most estimated prompt tokens
//! compact_after_messages = 0  # summarise older messages past this many (0: never)
//! compact_after_tokens = 0
//! compact_keep_recent = 10
//! tool_output_max_chars = 20000  # longer tool results become artifacts, paged by the model
//! tool_output_preview_chars = 2000
//!
//! [durability]                # turns whose process died are resumed elsewhere
//! lease_ttl_secs = 30         # a turn's lease runs out this long after its last renewal
//! scan_interval_secs = 10     # how often each replica looks for stranded turns
//!
//! [push]                      # A2A push notifications (webhooks); see crate::push
//! enabled = false
//!
//! [records]                   # each turn's execution record (docs/observability.md)
//! enabled = true              # false: turns write none
//!
//! [artifacts]                # files and large artifacts (docs/artifacts.md)
//! backend = "filesystem"      # or "s3": bucket, prefix, endpoint, region
//! path = ".looopy/blobs"      # (credentials from the AWS variables)
//! inline_limit_bytes = 65536  # larger content is stored as a blob
//! max_upload_bytes = 104857600
//! presign_ttl_secs = 3600     # lifetime of a presigned S3 download URL
//!
//! [[auth.tokens]]
//! principal = "alice"
//! token_env = "ALICE_TOKEN"   # or token = "..." (kept out of logs)
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use looopy_a2a::ProtocolVersion;
use looopy_core::models::ModelRef;
use std::borrow::Cow;

use looopy_stores::StoreConfig;
use serde::Deserialize;

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The agent.
    #[serde(default)]
    pub agent: AgentSection,
    /// The model; `None` when no `[llm]` section and no `LOOOPY_LLM_*` variables.
    #[serde(default)]
    pub llm: Option<LlmSection>,
    /// Tool sources.
    #[serde(default)]
    pub tools: ToolsSection,
    /// Where state lives, as the `[store]` table names it: `backend =
    /// "sqlite"` with the fields of [`looopy_stores::SqliteConfig`]
    /// (`path`...), `"memory"`, `"redis"` with the fields of
    /// [`looopy_stores::RedisConfig`] (`url` for one server, or
    /// `cluster_urls = ["redis://host:port", ...]` for a Redis Cluster),
    /// or `"postgres"` with the fields of [`looopy_stores::PostgresConfig`]
    /// (`url`, `pool_size`, `schema`). `None` without a table: see
    /// [`Config::store`].
    #[serde(default)]
    pub store: Option<StoreConfig>,
    /// The HTTP server.
    #[serde(default)]
    pub server: ServerSection,
    /// Who may call the server.
    #[serde(default)]
    pub auth: AuthSection,
    /// Turn ownership and recovery.
    #[serde(default)]
    pub durability: DurabilitySection,
    /// What the model is sent of a conversation, compaction, long tool results.
    #[serde(default)]
    pub history: crate::history::HistorySection,
    /// A2A push notifications (webhooks).
    #[serde(default)]
    pub push: crate::push::PushSection,
    /// Where files and large artifacts are stored; `None` without the
    /// table: everything stays inline in the artifact store.
    #[serde(default)]
    pub artifacts: Option<crate::artifacts::ArtifactsSection>,
    /// What `looopy eval` uses beside the agent (`[eval.judge]`).
    #[serde(default)]
    pub eval: EvalSection,
    /// Whether turns write execution records.
    #[serde(default)]
    pub records: RecordsSection,
    /// Prices of models over the built-in table, by `provider:model`
    /// (`[pricing."openai:gpt-4.1"] input = 2.0, output = 8.0`, in US
    /// dollars per million tokens): see `eval::price_table`.
    #[serde(default)]
    pub pricing: BTreeMap<String, looopy_core::pricing::Price>,
}

/// `[durability]`: how fast a turn whose process died is found and resumed
/// by another (at most `lease_ttl_secs + scan_interval_secs` later). Only
/// stores that outlive the process (SQLite, Redis) make this useful; the
/// memory store recovers nothing after a restart.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurabilitySection {
    /// A running turn's lease runs out this long after its last renewal
    /// (renewed every third of it). Seconds; fractions allowed.
    #[serde(default = "default_lease_ttl")]
    pub lease_ttl_secs: f64,
    /// Time between two scans for stranded turns. Seconds; fractions allowed.
    #[serde(default = "default_scan_interval")]
    pub scan_interval_secs: f64,
}

fn default_lease_ttl() -> f64 {
    30.0
}
fn default_scan_interval() -> f64 {
    10.0
}

impl Default for DurabilitySection {
    fn default() -> Self {
        DurabilitySection {
            lease_ttl_secs: default_lease_ttl(),
            scan_interval_secs: default_scan_interval(),
        }
    }
}

impl DurabilitySection {
    /// The lease time-to-live.
    pub fn lease_ttl(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.lease_ttl_secs)
    }

    /// The scan interval.
    pub fn scan_interval(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.scan_interval_secs)
    }
}

/// `[agent]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    /// Name (agent card, spans).
    #[serde(default = "default_name")]
    pub name: String,
    /// What it does (agent card).
    #[serde(default = "default_description")]
    pub description: String,
    /// System prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Iteration limit per turn.
    #[serde(default = "default_max_iterations")]
    pub max_iterations: u32,
    /// Tool calls run at once.
    #[serde(default = "default_parallel")]
    pub max_parallel_tools: usize,
    /// Tool timeout in seconds.
    #[serde(default = "default_tool_timeout")]
    pub tool_timeout_secs: u64,
    /// Per-tool timeouts in seconds, by tool name (0: no limit for that tool).
    #[serde(default)]
    pub tool_timeouts: BTreeMap<String, f64>,
    /// Most tool calls in one turn; past it the turn wraps up (none by default).
    #[serde(default)]
    pub max_tool_calls: Option<u32>,
    /// Longest wall time of one turn in seconds; past it the turn ends
    /// `failed` (none by default).
    #[serde(default)]
    pub max_turn_secs: Option<f64>,
    /// What a failed tool call does: `"continue"` (the model reads the error;
    /// the default) or `"fail"` (the turn ends `failed`).
    #[serde(default)]
    pub tool_failure_mode: FailureMode,
    /// Offers the model the built-in artifact tools (`create_artifact`,
    /// `append_to_artifact`, `replace_artifact`); off by default.
    #[serde(default)]
    pub artifact_tools: bool,
    /// Tools whose calls wait for a person's approval: the turn ends
    /// `input-required` with a question, and the next message approves,
    /// denies or edits each call (none by default).
    #[serde(default)]
    pub approve_tools: Vec<String>,
    /// `[[agent.skills]]`: what the agent can do, listed on the agent card;
    /// over MCP each is a tool of its own (none by default: one tool,
    /// `send_message`).
    #[serde(default)]
    pub skills: Vec<SkillConfig>,
}

/// `[[agent.skills]]`: a skill of the agent, as the A2A agent card lists
/// it. Over MCP it is a tool named by its id: a call runs a turn told which
/// skill was asked for (docs/mcp.md).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillConfig {
    /// Unique among the agent's skills; the MCP tool's name, so a name
    /// clients and models accept: [`is_tool_name`].
    pub id: String,
    /// For people; the id when not given.
    #[serde(default)]
    pub name: Option<String>,
    /// What it does: the card's description of it, the MCP tool's
    /// description, and what a turn that runs it is told.
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(default)]
    pub examples: Vec<String>,
}

impl SkillConfig {
    /// Its name, else its id.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.id)
    }

    /// The skill as the agent card lists it.
    pub fn card_skill(&self) -> looopy_a2a::AgentSkill {
        let mut skill = looopy_a2a::AgentSkill::new(&self.id, self.name(), &self.description);
        skill.tags.clone_from(&self.tags);
        skill.examples.clone_from(&self.examples);
        skill
    }
}

/// Whether `name` is a tool name both MCP clients and the models they pass
/// tools to accept: 1 to 64 ASCII letters, digits, `_` and `-`.
pub fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `[agent] tool_failure_mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureMode {
    /// The model reads the error and goes on.
    #[default]
    Continue,
    /// The first failed call ends the turn.
    Fail,
}

fn default_name() -> String {
    "looopy".into()
}
fn default_description() -> String {
    "A Looopy agent".into()
}
fn default_max_iterations() -> u32 {
    10
}
fn default_parallel() -> usize {
    5
}
fn default_tool_timeout() -> u64 {
    30
}

impl Default for AgentSection {
    fn default() -> Self {
        AgentSection {
            name: default_name(),
            description: default_description(),
            system_prompt: None,
            max_iterations: default_max_iterations(),
            max_parallel_tools: default_parallel(),
            tool_timeout_secs: default_tool_timeout(),
            tool_timeouts: BTreeMap::new(),
            max_tool_calls: None,
            max_turn_secs: None,
            tool_failure_mode: FailureMode::Continue,
            artifact_tools: false,
            approve_tools: Vec::new(),
            skills: Vec::new(),
        }
    }
}

/// `[llm]`: a provider's model (`model = "gemini:gemini-2.5-flash"`, see
/// `looopy::registry`), or a model of an OpenAI-compatible endpoint (a
/// LiteLLM proxy, OpenAI, vLLM...) at `base_url`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    /// Base URL, such as `http://localhost:4000/v1`: required for a bare
    /// model name; for a `provider:model` one, a URL other than the vendor's.
    #[serde(default)]
    pub base_url: Option<String>,
    /// `provider:model`, or a bare model name of the endpoint at `base_url`.
    #[serde(default)]
    pub model: Option<String>,
    /// The environment variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Token limit per call.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Retries of 429/5xx/connection errors (default 5; 0 disables).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Models tried in order when `model` cannot answer (overloaded, a
    /// 5xx, a rate limit that outlasts the retries, unreachable), each a
    /// `provider:model` with its vendor's variables (`base_url` and
    /// `api_key_env` are the first model's only).
    #[serde(default)]
    pub fallback: Vec<String>,
    /// `[llm.gemini]`: options of a `gemini:` model.
    #[serde(default)]
    pub gemini: GeminiOptions,
    /// `[llm.anthropic]`: options of an `anthropic:` model.
    #[serde(default)]
    pub anthropic: AnthropicOptions,
}

/// `[llm.anthropic]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnthropicOptions {
    /// Extended thinking's `budget_tokens` (unset: no extended thinking).
    #[serde(default)]
    pub thinking_budget_tokens: Option<u32>,
    /// Prompt caching breakpoints (default on).
    #[serde(default)]
    pub prompt_cache: Option<bool>,
}

impl LlmSection {
    /// The `provider:model` the section names, if it names one.
    pub fn model_ref(&self) -> Result<Option<ModelRef>> {
        match &self.model {
            Some(m) => Ok(ModelRef::parse(m)?),
            None => Ok(None),
        }
    }
}

/// `[llm.gemini]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeminiOptions {
    /// `thinkingConfig.thinkingBudget`, in tokens (0 turns thinking off on
    /// the models that allow it).
    #[serde(default)]
    pub thinking_budget_tokens: Option<u32>,
}

/// `[tools]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsSection {
    /// MCP servers.
    #[serde(default)]
    pub mcp: Vec<McpServerConfig>,
    /// Remote A2A agents offered as tools.
    #[serde(default)]
    pub a2a: Vec<RemoteAgentConfig>,
}

/// `[[tools.mcp]]`: a child process (`command`) or a streamable HTTP server (`url`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// A name for logs and the default tool-name prefix.
    pub name: String,
    /// Program to run (stdio transport).
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// URL (streamable HTTP transport).
    #[serde(default)]
    pub url: Option<String>,
    /// Prefix for its tool names (default: none).
    #[serde(default)]
    pub prefix: Option<String>,
    /// Whether the server may ask the agent's model
    /// (`sampling/createMessage`): `"off"` (the default), `"allowed"`, or
    /// `"ask"` (each request waits for a person's approval).
    #[serde(default)]
    pub sampling: SamplingPolicy,
    /// The most tokens one sampling request may ask for (default 1024);
    /// a request asking for more is refused.
    #[serde(default = "default_sampling_max_tokens")]
    pub sampling_max_tokens: u32,
    /// The roots the server is told it may work in (`roots/list`):
    /// `file://` URIs with optional names.
    #[serde(default)]
    pub roots: Vec<RootConfig>,
    /// Whether the server may ask the person (`elicitation/create`):
    /// `"ask"` (the default: the call pauses and the turn ends
    /// `input-required` with the question) or `"off"`.
    #[serde(default)]
    pub elicitation: ElicitationPolicy,
    /// How long a paused call waits in this process for the answer, in
    /// seconds (default 900); an answer that comes later runs the call
    /// again.
    #[serde(default = "default_elicitation_timeout_secs")]
    pub elicitation_timeout_secs: u64,
    /// Headers sent with every request (`url` servers), values as written;
    /// a secret belongs in `headers_env`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Headers sent with every request (`url` servers), each value read
    /// from the environment variable named: `{ "X-Api-Key" = "MY_KEY" }`.
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for the server
    /// (`url` servers).
    #[serde(default)]
    pub token_env: Option<String>,
    /// OAuth 2.0 client credentials (`url` servers): the token is asked of
    /// the authorization server the MCP server names, instead of
    /// `token_env`.
    #[serde(default)]
    pub oauth: Option<McpOAuthConfig>,
}

/// `[[tools.mcp]] oauth`: the client credentials grant, for an agent that
/// runs with no person at hand.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthConfig {
    /// The client's id at the authorization server.
    pub client_id: String,
    /// The environment variable holding its secret (never the secret itself).
    pub client_secret_env: String,
    /// The scopes asked for (none: the authorization server's default).
    #[serde(default)]
    pub scopes: Vec<String>,
}

fn default_elicitation_timeout_secs() -> u64 {
    looopy_tools::DEFAULT_ELICITATION_TIMEOUT.as_secs()
}

/// `[[tools.mcp]] elicitation`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationPolicy {
    /// The server's questions are asked as `input-required` turns.
    #[default]
    Ask,
    /// Not advertised; the server's questions are refused.
    Off,
}

fn default_sampling_max_tokens() -> u32 {
    looopy_tools::DEFAULT_SAMPLING_MAX_TOKENS
}

/// `[[tools.mcp]] sampling`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SamplingPolicy {
    /// Not advertised; the server's requests are refused.
    #[default]
    Off,
    /// The agent's model answers, within `sampling_max_tokens`.
    Allowed,
    /// As `Allowed`, once a person approves the request: its call pauses
    /// and the turn ends `input-required` with the question.
    Ask,
}

/// One of `[[tools.mcp]] roots`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    /// A `file://` URI.
    pub uri: String,
    /// A name for it.
    #[serde(default)]
    pub name: Option<String>,
}

impl McpServerConfig {
    /// The streamable HTTP server at `url`, with the headers, token or
    /// OAuth credentials the section gives, read from `env` where it names
    /// variables; a variable that is not set is an error naming the server.
    pub fn http_server(
        &self,
        url: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<looopy_tools::HttpServer> {
        let var = |var: &str, what: &str| {
            env(var).with_context(|| {
                format!("[[tools.mcp]] '{}': {what}: ${var} is not set", self.name)
            })
        };
        let mut server = looopy_tools::HttpServer::new(url);
        for (name, value) in &self.headers {
            server = server.header(name, value);
        }
        for (name, variable) in &self.headers_env {
            server = server.header(name, var(variable, &format!("header {name}"))?);
        }
        if let Some(variable) = &self.token_env {
            server = server.bearer_token(var(variable, "token_env")?);
        }
        if let Some(oauth) = &self.oauth {
            let secret = var(&oauth.client_secret_env, "oauth client_secret_env")?;
            server = with_oauth(server, oauth, secret, &self.name)?;
        }
        Ok(server)
    }

    /// The roots as the MCP provider takes them; a URI that is not
    /// `file://` is refused, naming the server.
    pub fn mcp_roots(&self) -> Result<Vec<looopy_tools::McpRoot>> {
        self.roots
            .iter()
            .map(|r| {
                let root = looopy_tools::McpRoot::new(&r.uri)
                    .with_context(|| format!("[[tools.mcp]] '{}': roots", self.name))?;
                Ok(match &r.name {
                    Some(name) => root.with_name(name),
                    None => root,
                })
            })
            .collect()
    }
}

#[cfg(feature = "mcp-oauth")]
fn with_oauth(
    server: looopy_tools::HttpServer,
    oauth: &McpOAuthConfig,
    secret: String,
    _name: &str,
) -> Result<looopy_tools::HttpServer> {
    Ok(
        server.with_oauth_client_credentials(
            &oauth.client_id,
            secret,
            oauth.scopes.iter().cloned(),
        ),
    )
}

#[cfg(not(feature = "mcp-oauth"))]
fn with_oauth(
    _server: looopy_tools::HttpServer,
    _oauth: &McpOAuthConfig,
    _secret: String,
    name: &str,
) -> Result<looopy_tools::HttpServer> {
    bail!("[[tools.mcp]] '{name}': oauth needs looopy built with the `mcp-oauth` feature")
}

/// `[[tools.a2a]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteAgentConfig {
    /// The tool's name.
    pub name: String,
    /// The agent's base URL.
    pub url: String,
    /// What the tool does (default: the agent card's description).
    #[serde(default)]
    pub description: Option<String>,
    /// Environment variable holding a bearer token for it.
    #[serde(default)]
    pub token_env: Option<String>,
}

/// `[server]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Address to listen on.
    #[serde(default = "default_bind")]
    pub bind: String,
    /// Largest request body in bytes.
    #[serde(default = "default_body_limit")]
    pub max_body_bytes: usize,
    /// The URL clients reach the server at (agent card); default from `bind`.
    #[serde(default)]
    pub public_url: Option<String>,
    /// The agent card a request naming no protocol version gets at
    /// `/.well-known/agent-card.json`: `"1.0"` (default, what the 1.0
    /// specification defines for that URI) or `"0.3"`, for 0.3 clients that
    /// fetch it without an `A2A-Version` header. `/.well-known/agent.json`
    /// always answers the 0.3 card.
    #[serde(default, deserialize_with = "protocol_version")]
    pub card_default_version: Option<ProtocolVersion>,
}

fn protocol_version<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<ProtocolVersion>, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map(Some).map_err(|_| {
        serde::de::Error::custom(format!(
            "card_default_version {text:?} is not a protocol version Looopy speaks (\"1.0\" or \"0.3\")"
        ))
    })
}

impl Config {
    /// The store to build: the configured one, or the memory store when
    /// the file names none (`looopy run`, tests; `looopy serve` sets
    /// [`serve_default_store`](Self::serve_default_store) first).
    pub fn store(&self) -> Cow<'_, StoreConfig> {
        match &self.store {
            Some(store) => Cow::Borrowed(store),
            None => Cow::Owned(StoreConfig::Memory(Default::default())),
        }
    }

    /// What `looopy serve` keeps its state in when the file names no store:
    /// a SQLite database with the defaults of
    /// [`SqliteConfig`](looopy_stores::SqliteConfig) (`.looopy/looopy.db`
    /// in the working directory), so that conversations outlive a restart.
    pub fn serve_default_store() -> StoreConfig {
        StoreConfig::Sqlite(looopy_stores::SqliteConfig::default())
    }
}

fn default_bind() -> String {
    "127.0.0.1:8080".into()
}
fn default_body_limit() -> usize {
    1024 * 1024
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            bind: default_bind(),
            max_body_bytes: default_body_limit(),
            public_url: None,
            card_default_version: None,
        }
    }
}

/// `[auth]`: no tokens means no authentication.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// Bearer tokens (or API keys sent as `X-API-Key`).
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
}

/// `[[auth.tokens]]`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Who this token stands for.
    pub principal: String,
    /// The token itself.
    #[serde(default)]
    pub token: Option<String>,
    /// The environment variable holding it.
    #[serde(default)]
    pub token_env: Option<String>,
}

impl std::fmt::Debug for TokenConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenConfig")
            .field("principal", &self.principal)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_env", &self.token_env)
            .finish()
    }
}

impl TokenConfig {
    /// The token, read from the file or the environment.
    pub fn resolve(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<String> {
        match (&self.token, &self.token_env) {
            (Some(t), None) => Ok(t.clone()),
            (None, Some(var)) => env(var)
                .with_context(|| format!("auth token for '{}': ${var} is not set", self.principal)),
            _ => bail!(
                "auth token for '{}': give exactly one of `token` and `token_env`",
                self.principal
            ),
        }
    }
}

impl Config {
    /// Reads a file.
    pub fn load(path: &Path) -> Result<Config> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    /// Parses TOML text and checks it.
    pub fn parse(text: &str) -> Result<Config> {
        let config: Config = toml::from_str(text)?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<()> {
        for m in &self.tools.mcp {
            if m.command.is_some() == m.url.is_some() {
                bail!(
                    "[[tools.mcp]] '{}': give exactly one of `command` and `url`",
                    m.name
                );
            }
            if m.sampling_max_tokens == 0 {
                bail!(
                    "[[tools.mcp]] '{}': sampling_max_tokens must be at least 1",
                    m.name
                );
            }
            if m.elicitation_timeout_secs == 0 {
                bail!(
                    "[[tools.mcp]] '{}': elicitation_timeout_secs must be at least 1",
                    m.name
                );
            }
            if m.command.is_some() {
                let http_only = [
                    ("headers", !m.headers.is_empty()),
                    ("headers_env", !m.headers_env.is_empty()),
                    ("token_env", m.token_env.is_some()),
                    ("oauth", m.oauth.is_some()),
                ];
                if let Some((key, _)) = http_only.iter().find(|(_, given)| *given) {
                    bail!(
                        "[[tools.mcp]] '{}': `{key}` is for a `url` server (a `command` server takes `env`)",
                        m.name
                    );
                }
            }
            if m.token_env.is_some() && m.oauth.is_some() {
                bail!(
                    "[[tools.mcp]] '{}': give at most one of `token_env` and `oauth`",
                    m.name
                );
            }
            m.mcp_roots()?;
        }
        if self.agent.max_iterations == 0 {
            bail!("[agent] max_iterations must be at least 1");
        }
        if let Some(secs) = self.agent.max_turn_secs
            && !(0.01..=86_400.0).contains(&secs)
        {
            bail!("[agent] max_turn_secs must be between 0.01 and 86400 seconds, not {secs}");
        }
        if self.agent.approve_tools.iter().any(|t| t.trim().is_empty()) {
            bail!("[agent] approve_tools must name tools; an empty name was given");
        }
        self.validate_skills()?;
        for (tool, secs) in &self.agent.tool_timeouts {
            if !(0.0..=86_400.0).contains(secs) {
                bail!(
                    "[agent.tool_timeouts] {tool} must be between 0 and 86400 seconds, not {secs}"
                );
            }
        }
        let d = &self.durability;
        for (name, value) in [
            ("lease_ttl_secs", d.lease_ttl_secs),
            ("scan_interval_secs", d.scan_interval_secs),
        ] {
            if !(0.01..=86_400.0).contains(&value) {
                bail!("[durability] {name} must be between 0.01 and 86400 seconds, not {value}");
            }
        }
        self.push.validate()?;
        if let Some(artifacts) = &self.artifacts {
            artifacts.validate()?;
        }
        Ok(())
    }

    fn validate_skills(&self) -> Result<()> {
        let skills = &self.agent.skills;
        for (i, skill) in skills.iter().enumerate() {
            if !is_tool_name(&skill.id) {
                bail!(
                    "[[agent.skills]] '{}': the id is its MCP tool's name: give 1 to 64 \
                     letters, digits, `_` or `-`",
                    skill.id
                );
            }
            if skills[..i].iter().any(|s| s.id == skill.id) {
                bail!("[[agent.skills]] '{}': two skills have this id", skill.id);
            }
            if skill.description.trim().is_empty() {
                bail!(
                    "[[agent.skills]] '{}': give a description (the card and the MCP tool show it)",
                    skill.id
                );
            }
            if skill.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
                bail!("[[agent.skills]] '{}': the name is empty", skill.id);
            }
        }
        Ok(())
    }

    /// Sets the model (`--model`), over the file and the environment.
    pub fn set_model(&mut self, model: &str) {
        self.llm.get_or_insert_with(LlmSection::default).model = Some(model.to_owned());
    }

    /// Applies `LOOOPY_LLM_BASE_URL`, `LOOOPY_LLM_MODEL` (and notes
    /// `LOOOPY_LLM_API_KEY`) over the `[llm]` section.
    pub fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        let base_url = env("LOOOPY_LLM_BASE_URL").filter(|v| !v.is_empty());
        let model = env("LOOOPY_LLM_MODEL").filter(|v| !v.is_empty());
        if base_url.is_none() && model.is_none() {
            return;
        }
        let llm = self.llm.get_or_insert_with(LlmSection::default);
        if base_url.is_some() {
            llm.base_url = base_url;
        }
        if model.is_some() {
            llm.model = model;
        }
    }

    /// Refuses a half-filled `[llm]` section (after [`apply_env`](Self::apply_env)):
    /// a model needs both `base_url` and `model`, and settings without them
    /// would be silently ignored. No section at all is fine (no model).
    pub fn check_llm(&self) -> Result<()> {
        let Some(llm) = &self.llm else {
            return Ok(());
        };
        // A provider's model needs no base URL (its vendor's is the default).
        if llm.model_ref()?.is_some() {
            return Ok(());
        }
        let missing: Vec<&str> = [
            ("base_url", llm.base_url.is_none()),
            ("model", llm.model.is_none()),
        ]
        .into_iter()
        .filter_map(|(key, absent)| absent.then_some(key))
        .collect();
        let (key, var) = match missing.as_slice() {
            [] => return Ok(()),
            ["base_url"] => ("`base_url`", "LOOOPY_LLM_BASE_URL"),
            ["model"] => ("`model`", "LOOOPY_LLM_MODEL"),
            _ => (
                "`base_url` and `model`",
                "LOOOPY_LLM_BASE_URL and LOOOPY_LLM_MODEL",
            ),
        };
        bail!(
            "the [llm] section lacks {key}: give both `base_url` and `model` (or {var}), \
             or remove the section to run without a model"
        )
    }
}

/// `[records]`: whether each turn writes its execution record to the
/// store (on by default; `GET /v1/tasks/{id}/record` reads it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordsSection {
    /// `false`: turns write no record.
    #[serde(default = "default_records_enabled")]
    pub enabled: bool,
}

fn default_records_enabled() -> bool {
    true
}

impl Default for RecordsSection {
    fn default() -> Self {
        RecordsSection {
            enabled: default_records_enabled(),
        }
    }
}

/// `[eval]`: what `looopy eval` uses beside the agent.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSection {
    /// `[eval.judge]`: the model that grades rubrics.
    #[serde(default)]
    pub judge: Option<JudgeSection>,
}

/// `[eval.judge]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeSection {
    /// The model, as `provider:model` (with its vendor's key variable).
    pub model: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("config.rs");
        let example: String = doc
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| l.trim_start_matches("//!").trim_start_matches(' '))
            .collect::<Vec<_>>()
            .join("\n");
        let c = Config::parse(&example).unwrap();
        assert_eq!(c.agent.name, "helper");
        assert_eq!(c.tools.mcp[0].args.len(), 3);
        assert!(matches!(c.store, Some(StoreConfig::Redis(_))));
        assert_eq!(c.auth.tokens[0].principal, "alice");
        assert_eq!(c.agent.skills[0].id, "summarise");
        assert_eq!(c.agent.skills[0].examples.len(), 1);
        assert_eq!(c.durability.lease_ttl(), std::time::Duration::from_secs(30));
        assert_eq!(
            c.durability.scan_interval(),
            std::time::Duration::from_secs(10)
        );
        assert!(c.records.enabled);
        assert!(
            !Config::parse("[records]\nenabled = false")
                .unwrap()
                .records
                .enabled
        );
        assert!(Config::parse("").unwrap().records.enabled);
        assert!(Config::parse("[records]\nenable = false").is_err());
    }

    #[test]
    fn the_card_version_parses_and_is_checked() {
        let c = Config::parse("[server]\ncard_default_version = \"0.3\"").unwrap();
        assert_eq!(
            c.server.card_default_version,
            Some(looopy_a2a::ProtocolVersion::V0_3)
        );
        assert_eq!(Config::parse("").unwrap().server.card_default_version, None);
        let err = format!(
            "{:#}",
            Config::parse("[server]\ncard_default_version = \"2.0\"").unwrap_err()
        );
        assert!(err.contains("\"1.0\" or \"0.3\""), "{err}");
    }

    #[test]
    fn durability_knobs_parse_and_are_checked() {
        let c =
            Config::parse("[durability]\nlease_ttl_secs = 1.5\nscan_interval_secs = 0.25").unwrap();
        assert_eq!(
            c.durability.lease_ttl(),
            std::time::Duration::from_millis(1500)
        );
        assert_eq!(
            c.durability.scan_interval(),
            std::time::Duration::from_millis(250)
        );
        let d = Config::parse("").unwrap().durability;
        assert_eq!(
            d.lease_ttl_secs + d.scan_interval_secs,
            40.0,
            "recovered within 40 s by default"
        );
        for bad in [
            "lease_ttl_secs = 0",
            "scan_interval_secs = -1",
            "lease_ttl_secs = nan",
        ] {
            let e = Config::parse(&format!("[durability]\n{bad}")).unwrap_err();
            assert!(e.to_string().contains("[durability]"), "{bad}: {e}");
        }
        assert!(
            Config::parse("[durability]\nlease_ttl = 3").is_err(),
            "unknown keys are refused"
        );
    }

    #[test]
    fn the_store_may_be_a_redis_cluster() {
        let c = Config::parse(
            "[store]\nbackend = \"redis\"\ncluster_urls = [\"redis://a:7000\", \"redis://b:7001\"]",
        )
        .unwrap();
        let Some(StoreConfig::Redis(redis)) = c.store else {
            panic!("expected redis: {:?}", c.store);
        };
        assert!(redis.is_cluster());
        assert_eq!(redis.cluster_urls, ["redis://a:7000", "redis://b:7001"]);
        let e = Config::parse("[store]\nbackend = \"redis\"\ncluster_url = \"x\"").unwrap_err();
        assert!(format!("{e:#}").contains("cluster_url"), "{e:#}");
    }

    #[test]
    fn empty_file_means_memory_store_and_no_model() {
        let c = Config::parse("").unwrap();
        assert!(c.llm.is_none());
        assert!(c.store.is_none());
        assert!(matches!(*c.store(), StoreConfig::Memory(_)));
        assert!(matches!(
            Config::serve_default_store(),
            StoreConfig::Sqlite(s) if s.path.to_str() == Some(".looopy/looopy.db")
        ));
        let c = Config::parse("[store]\nbackend = \"sqlite\"\npath = \"/srv/a.db\"").unwrap();
        assert!(
            matches!(*c.store(), StoreConfig::Sqlite(ref s) if s.path.to_str() == Some("/srv/a.db"))
        );
        assert_eq!(c.server.bind, "127.0.0.1:8080");
    }

    #[test]
    fn mistakes_are_named() {
        let e = Config::parse("[agent]\nnmae = \"x\"").unwrap_err();
        assert!(format!("{e:#}").contains("nmae"), "{e:#}");
        let e = Config::parse("[[tools.mcp]]\nname = \"x\"").unwrap_err();
        assert!(e.to_string().contains("exactly one of `command` and `url`"));
    }

    #[test]
    fn mcp_sampling_and_roots_parse_and_are_checked() {
        let server = "[[tools.mcp]]\nname = \"s\"\ncommand = \"x\"\n";
        let c = Config::parse(server).unwrap();
        let m = &c.tools.mcp[0];
        assert_eq!(m.sampling, SamplingPolicy::Off, "off by default");
        assert_eq!(m.sampling_max_tokens, 1024);
        assert!(m.roots.is_empty());
        assert_eq!(m.elicitation, ElicitationPolicy::Ask, "asked by default");
        assert_eq!(m.elicitation_timeout_secs, 900);
        let off = Config::parse(&format!(
            "{server}elicitation = \"off\"\nelicitation_timeout_secs = 60\n"
        ))
        .unwrap();
        assert_eq!(off.tools.mcp[0].elicitation, ElicitationPolicy::Off);
        assert_eq!(off.tools.mcp[0].elicitation_timeout_secs, 60);

        let c = Config::parse(&format!(
            "{server}sampling = \"allowed\"\nsampling_max_tokens = 300\n\
             roots = [{{ uri = \"file:///srv/a\", name = \"a\" }}, {{ uri = \"file:///b\" }}]\n"
        ))
        .unwrap();
        let m = &c.tools.mcp[0];
        assert_eq!(m.sampling, SamplingPolicy::Allowed);
        assert_eq!(m.sampling_max_tokens, 300);
        let asking = Config::parse(&format!("{server}sampling = \"ask\"\n")).unwrap();
        assert_eq!(asking.tools.mcp[0].sampling, SamplingPolicy::Ask);
        let roots = m.mcp_roots().unwrap();
        assert_eq!(roots[0].uri(), "file:///srv/a");
        assert_eq!(roots[0].name(), Some("a"));
        assert_eq!(roots[1].name(), None);

        for (bad, named) in [
            (
                "sampling = \"maybe\"",
                "expected one of `off`, `allowed`, `ask`",
            ),
            ("sampling = true", "sampling"),
            (
                "sampling_max_tokens = 0",
                "sampling_max_tokens must be at least 1",
            ),
            ("sampling_max_tokens = -5", "sampling_max_tokens"),
            ("roots = [{ uri = \"https://a\" }]", "not a file:// URI"),
            ("roots = [{ path = \"/a\" }]", "path"),
            ("elicitation = \"always\"", "expected `ask` or `off`"),
            (
                "elicitation_timeout_secs = 0",
                "elicitation_timeout_secs must be at least 1",
            ),
        ] {
            let e = format!(
                "{:#}",
                Config::parse(&format!("{server}{bad}\n")).unwrap_err()
            );
            assert!(e.contains(named), "{bad}: {e}");
        }
    }

    #[test]
    fn skills_parse_for_the_card_and_are_checked() {
        assert!(Config::parse("").unwrap().agent.skills.is_empty());
        let c = Config::parse(
            "[[agent.skills]]\nid = \"triage\"\ndescription = \"Sorts tickets\"\n\
             tags = [\"support\"]\n\
             [[agent.skills]]\nid = \"draft-reply\"\nname = \"Draft a reply\"\n\
             description = \"Writes an answer\"\nexamples = [\"Answer ticket 12\"]\n",
        )
        .unwrap();
        let [triage, reply] = c.agent.skills.as_slice() else {
            panic!("two skills: {:?}", c.agent.skills);
        };
        assert_eq!(triage.name(), "triage", "the id when no name is given");
        let card = reply.card_skill();
        assert_eq!(
            (
                card.id.as_str(),
                card.name.as_str(),
                card.description.as_str()
            ),
            ("draft-reply", "Draft a reply", "Writes an answer")
        );
        assert_eq!(card.examples, ["Answer ticket 12"]);
        assert_eq!(triage.card_skill().tags, ["support"]);

        let skill = |id: &str| format!("[[agent.skills]]\nid = \"{id}\"\ndescription = \"d\"\n");
        for (bad, named) in [
            (
                skill("has space"),
                "'has space': the id is its MCP tool's name",
            ),
            (skill(""), "the id is its MCP tool's name"),
            (skill(&"x".repeat(65)), "1 to 64"),
            (skill("dotted.name"), "'dotted.name'"),
            (
                format!("{}{}", skill("a"), skill("a")),
                "'a': two skills have this id",
            ),
            (
                "[[agent.skills]]\nid = \"a\"\ndescription = \" \"\n".to_owned(),
                "'a': give a description",
            ),
            (
                "[[agent.skills]]\nid = \"a\"\ndescription = \"d\"\nname = \"\"\n".to_owned(),
                "'a': the name is empty",
            ),
            ("[[agent.skills]]\nid = \"a\"\n".to_owned(), "description"),
            (format!("{}input_modes = []\n", skill("a")), "input_modes"),
        ] {
            let e = format!("{:#}", Config::parse(&bad).unwrap_err());
            assert!(e.contains(named), "{bad}: {e}");
        }
        assert!(is_tool_name(&"x".repeat(64)));
        assert!(is_tool_name("send_message"));
    }

    #[test]
    fn a_half_filled_llm_section_is_refused_after_the_environment_is_applied() {
        let mut c = Config::parse("[llm]\nbase_url = \"http://a\"").unwrap();
        let err = c.check_llm().unwrap_err().to_string();
        assert!(
            err.contains("lacks `model`") && err.contains("LOOOPY_LLM_MODEL"),
            "{err}"
        );
        c.apply_env(&|k| (k == "LOOOPY_LLM_MODEL").then(|| "m".to_owned()));
        c.check_llm().unwrap();
        let only_temperature = Config::parse("[llm]\ntemperature = 0.2").unwrap();
        let err = only_temperature.check_llm().unwrap_err().to_string();
        assert!(err.contains("lacks `base_url` and `model`"), "{err}");
        Config::parse("").unwrap().check_llm().unwrap();
    }

    #[test]
    fn environment_overrides_the_llm_section() {
        let mut c = Config::parse("[llm]\nbase_url = \"http://a\"\nmodel = \"m1\"").unwrap();
        c.apply_env(&|k| (k == "LOOOPY_LLM_MODEL").then(|| "m2".to_owned()));
        let llm = c.llm.unwrap();
        assert_eq!(llm.model.as_deref(), Some("m2"));
        assert_eq!(llm.base_url.as_deref(), Some("http://a"));
    }

    #[test]
    fn tokens_resolve_from_the_environment_and_stay_out_of_debug() {
        let t = TokenConfig {
            principal: "a".into(),
            token: None,
            token_env: Some("T".into()),
        };
        assert_eq!(t.resolve(&|_| Some("s3cret".into())).unwrap(), "s3cret");
        assert!(
            t.resolve(&|_| None)
                .unwrap_err()
                .to_string()
                .contains("$T is not set")
        );
        let inline = TokenConfig {
            principal: "a".into(),
            token: Some("s3cret".into()),
            token_env: None,
        };
        assert!(!format!("{inline:?}").contains("s3cret"));
    }

    #[test]
    fn http_headers_and_tokens_come_from_the_file_and_the_environment() {
        let c = Config::parse(
            r#"
[[tools.mcp]]
name = "search"
url = "http://127.0.0.1:9/mcp"
headers = { "X-Team" = "support" }
headers_env = { "X-Api-Key" = "SEARCH_KEY" }
token_env = "SEARCH_TOKEN"
"#,
        )
        .unwrap();
        let m = &c.tools.mcp[0];
        let env = |k: &str| match k {
            "SEARCH_KEY" => Some("k3y".to_owned()),
            "SEARCH_TOKEN" => Some("t0ken".to_owned()),
            _ => None,
        };
        let server = m.http_server("http://127.0.0.1:9/mcp", &env).unwrap();
        assert_eq!(
            server.headers,
            vec![
                ("X-Team".to_owned(), "support".to_owned()),
                ("X-Api-Key".to_owned(), "k3y".to_owned()),
            ]
        );
        assert_eq!(server.bearer_token.as_deref(), Some("t0ken"));
        let shown = format!("{server:?}");
        assert!(
            !shown.contains("k3y") && !shown.contains("t0ken"),
            "{shown}"
        );

        let missing = m
            .http_server("http://127.0.0.1:9/mcp", &|k| {
                (k == "SEARCH_TOKEN").then(|| "t".to_owned())
            })
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("'search'")
                && missing.contains("X-Api-Key")
                && missing.contains("$SEARCH_KEY is not set"),
            "{missing}"
        );
    }

    #[test]
    fn http_keys_are_refused_on_a_command_server_and_token_env_with_oauth() {
        for key in [
            "headers = { \"X-A\" = \"b\" }",
            "headers_env = { \"X-A\" = \"B\" }",
            "token_env = \"T\"",
            "oauth = { client_id = \"c\", client_secret_env = \"S\" }",
        ] {
            let text = format!("[[tools.mcp]]\nname = \"s\"\ncommand = \"x\"\n{key}");
            let e = Config::parse(&text).unwrap_err().to_string();
            assert!(e.contains("is for a `url` server"), "{key}: {e}");
        }
        let both = "[[tools.mcp]]\nname = \"s\"\nurl = \"http://h/mcp\"\ntoken_env = \"T\"\n\
                    oauth = { client_id = \"c\", client_secret_env = \"S\" }";
        let e = Config::parse(both).unwrap_err().to_string();
        assert!(e.contains("at most one of `token_env` and `oauth`"), "{e}");
        let unknown = "[[tools.mcp]]\nname = \"s\"\nurl = \"http://h/mcp\"\n\
                       oauth = { client_id = \"c\", client_secret = \"inline\" }";
        assert!(
            Config::parse(unknown).is_err(),
            "the secret itself is not a key"
        );
    }

    #[test]
    fn oauth_credentials_read_the_secret_from_the_environment() {
        let c = Config::parse(
            r#"
[[tools.mcp]]
name = "search"
url = "http://127.0.0.1:9/mcp"
oauth = { client_id = "looopy", client_secret_env = "SEARCH_SECRET", scopes = ["search"] }
"#,
        )
        .unwrap();
        let m = &c.tools.mcp[0];
        let unset = m
            .http_server("http://127.0.0.1:9/mcp", &|_| None)
            .unwrap_err()
            .to_string();
        assert!(
            unset.contains("'search'") && unset.contains("$SEARCH_SECRET is not set"),
            "{unset}"
        );
        let built = m.http_server("http://127.0.0.1:9/mcp", &|k| {
            (k == "SEARCH_SECRET").then(|| "s3cret".to_owned())
        });
        #[cfg(feature = "mcp-oauth")]
        {
            let server = built.unwrap();
            let oauth = server.oauth.as_ref().unwrap();
            assert_eq!(oauth.client_id, "looopy");
            assert_eq!(oauth.client_secret, "s3cret");
            assert_eq!(oauth.scopes, vec!["search".to_owned()]);
            assert!(!format!("{server:?}").contains("s3cret"));
        }
        #[cfg(not(feature = "mcp-oauth"))]
        assert!(
            built
                .unwrap_err()
                .to_string()
                .contains("the `mcp-oauth` feature")
        );
    }
}
