//! Turns a [`Config`] into the running parts: the model, the tools, the
//! stores, and a factory of Agents (one per conversation).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use async_trait::async_trait;
use looopy::registry::{ModelOptions, build_model};
use looopy_a2a::{A2aClient, EXTENSIONS_HEADER, RemoteAgentTools, TOOL_PROGRESS_EXTENSION};
use looopy_agent::{Agent, AgentBuilder, AgentError, AgentTemplate};
use looopy_core::models::{ModelLimits, ModelRef, ProviderKind};
use looopy_core::{LlmError, LlmProvider, LlmRequest, LlmResponse, ToolProvider, TurnContext};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_loop::hooks::{BeforeLlm, Hook, HookContext, HookError, HookPoints};
use looopy_loop::layers::timeout::TimeoutLayer;
use looopy_loop::layers::{FallbackLayer, RetryPolicy};
use looopy_loop::{AgentLoopConfig, ToolFailureMode};
use looopy_stores::Stores;
use looopy_tools::{HttpServer, McpReferences, McpSampling, McpToolProvider, StdioServer};

use crate::config::{
    Config, ElicitationPolicy, FailureMode, LlmSection, McpServerConfig, SamplingPolicy,
};

/// What every turn of `looopy serve` / `looopy run` shares.
#[derive(Clone)]
pub struct App {
    /// The configuration it was built from.
    pub config: Arc<Config>,
    /// The model (or one that explains how to configure it), unwrapped:
    /// each Agent's loop puts [`retry`](Self::retry) around it.
    pub llm: Arc<dyn LlmProvider>,
    /// How the loop retries failed model calls (`[llm] max_retries`).
    pub retry: RetryPolicy,
    /// The models of `[llm] fallback`, unwrapped, in order: each Agent's
    /// loop tries them (with [`retry`](Self::retry)) when the model fails
    /// in a way another could avoid (see `looopy_loop::layers::fallback`).
    pub fallbacks: Vec<Arc<dyn LlmProvider>>,
    /// Tool providers (MCP servers, remote agents), unwrapped: each Agent's
    /// loop bounds their calls by `[agent] tool_timeout_secs`.
    pub tools: Vec<Arc<dyn ToolProvider>>,
    /// The MCP servers among them, by name: what the resource and prompt
    /// references of a conversation are filled in from, before each model
    /// call (see [`McpReferenceHook`]).
    pub references: McpReferences,
    /// The stores.
    pub stores: Stores,
    /// The blob store of `[artifacts]`, `None` without the table.
    pub blobs: Option<Arc<dyn looopy_core::BlobStore>>,
}

/// Fills in the resource and prompt references of the messages a model is
/// sent (`looopy_core::mcp_ref`) from the agent's MCP servers: the hook
/// over [`McpReferences::expand`]. The stored conversation keeps the
/// references.
pub struct McpReferenceHook(pub McpReferences);

#[async_trait]
impl Hook for McpReferenceHook {
    fn name(&self) -> &str {
        "mcp-references"
    }

    fn points(&self) -> HookPoints {
        HookPoints::BEFORE_LLM
    }

    async fn before_llm(
        &self,
        _cx: &HookContext,
        request: &mut LlmRequest,
    ) -> Result<BeforeLlm, HookError> {
        if let Some(messages) = self.0.expand(&request.messages).await {
            request.messages = messages;
        }
        Ok(BeforeLlm::Continue)
    }
}

/// The model when none is configured: every call fails saying how to set one.
pub struct UnconfiguredLlm;

/// What [`UnconfiguredLlm`] says.
pub const NO_MODEL: &str = "no model is configured: set `model` in the [llm] section of looopy.toml \
to a provider's model (`gemini:gemini-2.5-flash`, `openai:gpt-4.1`, with the vendor's key variable) \
or pass --model; or set `base_url` and `model` of an OpenAI-compatible endpoint, or the \
LOOOPY_LLM_BASE_URL and LOOOPY_LLM_MODEL environment variables (and the API key in the variable \
named by `api_key_env`, or LOOOPY_LLM_API_KEY)";

#[async_trait]
impl LlmProvider for UnconfiguredLlm {
    async fn call(&self, _request: LlmRequest, _cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        Err(LlmError::NotConfigured {
            message: NO_MODEL.into(),
        })
    }
    fn provider_name(&self) -> &str {
        "none"
    }
    fn model_name(&self) -> &str {
        "none"
    }
}

/// The retry policy of `[llm] max_retries` (the loop's default when unset).
fn retry_policy(section: Option<&LlmSection>) -> RetryPolicy {
    match section.and_then(|s| s.max_retries) {
        Some(0) => RetryPolicy::none(),
        Some(n) => RetryPolicy::default().with_max_retries(n),
        None => RetryPolicy::default(),
    }
}

fn llm(
    section: Option<&LlmSection>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmProvider>> {
    let Some(section) = section else {
        return Ok(Arc::new(UnconfiguredLlm));
    };
    if let Some(model) = section.model_ref()? {
        let mut options = model_options(&model, section);
        options.base_url.clone_from(&section.base_url);
        options.api_key = section.api_key_env.as_deref().and_then(env);
        return build_model(&model, &options, env).with_context(|| format!("building {model}"));
    }
    let (Some(base_url), Some(model)) = (&section.base_url, &section.model) else {
        return Ok(Arc::new(UnconfiguredLlm));
    };
    let mut config = LiteLlmConfig::new(base_url.clone(), model.clone());
    let key = section
        .api_key_env
        .as_deref()
        .and_then(env)
        .or_else(|| env("LOOOPY_LLM_API_KEY"));
    if let Some(key) = key {
        config = config.with_api_key(key);
    }
    if let Some(t) = section.temperature {
        config = config.with_temperature(t);
    }
    if let Some(m) = section.max_tokens {
        config = config.with_max_tokens(m);
    }
    let provider = LiteLlmProvider::new(config).context("building the LLM provider")?;
    Ok(Arc::new(provider))
}

/// The options of `[llm]` that every `provider:model` of the section shares.
fn model_options(model: &ModelRef, section: &LlmSection) -> ModelOptions {
    let mut options = ModelOptions::new();
    options.temperature = section.temperature;
    options.max_tokens = section.max_tokens;
    options.thinking_budget_tokens = match model.provider {
        ProviderKind::Anthropic => section.anthropic.thinking_budget_tokens,
        _ => section.gemini.thinking_budget_tokens,
    };
    options.prompt_cache = section.anthropic.prompt_cache;
    options
}

/// The models of `[llm] fallback`, each with its vendor's variables.
fn fallbacks(
    section: Option<&LlmSection>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Arc<dyn LlmProvider>>> {
    let Some(section) = section else {
        return Ok(Vec::new());
    };
    section
        .fallback
        .iter()
        .map(|name| {
            let model = ModelRef::parse(name)
                .with_context(|| format!("[llm] fallback: reading `{name}`"))?
                .with_context(|| {
                    format!(
                        "[llm] fallback: `{name}` names no provider; write it as                          `provider:model`, such as `openai:gpt-4.1-mini`"
                    )
                })?;
            build_model(&model, &model_options(&model, section), env)
                .with_context(|| format!("building the fallback model {model}"))
        })
        .collect()
}

/// The provider of one `[[tools.mcp]]` server. With `sampling = "allowed"`,
/// the agent's model answers the server's sampling requests, and a hint
/// may pick one of the fallback models.
fn mcp(
    server: &McpServerConfig,
    llm: &Arc<dyn LlmProvider>,
    fallbacks: &[Arc<dyn LlmProvider>],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<McpToolProvider> {
    let provider = match (&server.command, &server.url) {
        (Some(command), _) => {
            let mut stdio = StdioServer::new(command).args(server.args.iter().cloned());
            for (k, v) in &server.env {
                stdio = stdio.env(k, v);
            }
            McpToolProvider::new(stdio)
        }
        (None, Some(url)) => McpToolProvider::new(server.http_server(url, env)?),
        // `Config::parse` refuses a server with neither.
        (None, None) => McpToolProvider::new(HttpServer::new("")),
    };
    let mut provider = provider.with_name(&server.name);
    if let Some(prefix) = &server.prefix {
        provider = provider.with_prefix(prefix);
    }
    if server.sampling != SamplingPolicy::Off {
        let mut sampling = fallbacks.iter().fold(
            McpSampling::new(llm.clone()).with_max_tokens(server.sampling_max_tokens),
            |sampling, model| sampling.with_model(model.clone()),
        );
        if server.sampling == SamplingPolicy::Ask {
            sampling = sampling.with_approval();
        }
        provider = provider.with_sampling(sampling);
    }
    let roots = server.mcp_roots()?;
    if !roots.is_empty() {
        provider = provider.with_roots(roots);
    }
    if server.elicitation == ElicitationPolicy::Off {
        provider = provider.without_elicitation();
    }
    provider =
        provider.with_elicitation_timeout(Duration::from_secs(server.elicitation_timeout_secs));
    Ok(provider)
}

impl App {
    /// Builds everything; connects to the stores (a wrong Redis URL fails here).
    pub async fn build(config: Config, env: &dyn Fn(&str) -> Option<String>) -> Result<App> {
        let model = llm(config.llm.as_ref(), env)?;
        let fallback_models = fallbacks(config.llm.as_ref(), env)?;
        let mut tools: Vec<Arc<dyn ToolProvider>> = Vec::new();
        let mut servers = Vec::new();
        for server in &config.tools.mcp {
            let provider = mcp(server, &model, &fallback_models, env)?;
            servers.push(provider.clone());
            tools.push(Arc::new(provider));
        }
        for remote in &config.tools.a2a {
            // The tool-progress extension: the called agent's own tool
            // calls reach this server's clients with its other events.
            let mut client =
                A2aClient::builder(&remote.url).header(EXTENSIONS_HEADER, TOOL_PROGRESS_EXTENSION);
            if let Some(var) = &remote.token_env {
                let token = env(var).with_context(|| {
                    format!("[[tools.a2a]] '{}': ${var} is not set", remote.name)
                })?;
                client = client.bearer_token(token);
            }
            let description = remote
                .description
                .clone()
                .unwrap_or_else(|| format!("Asks the remote agent '{}'", remote.name));
            let tool = RemoteAgentTools::new(client.build(), &remote.name, &description);
            tools.push(Arc::new(tool));
        }
        let stores = config
            .store()
            .build()
            .await
            .context("connecting to the stores")?;
        let blobs = config
            .artifacts
            .as_ref()
            .map(crate::artifacts::ArtifactsSection::open)
            .transpose()?;
        Ok(App {
            blobs,
            llm: model,
            retry: retry_policy(config.llm.as_ref()),
            fallbacks: fallback_models,
            tools,
            references: McpReferences::new(servers),
            stores,
            config: Arc::new(config),
        })
    }

    /// The tool time limits from `[agent]`: `tool_timeout_secs` for every
    /// tool, `[agent.tool_timeouts]` for some (0: none).
    pub fn tool_timeouts(&self) -> TimeoutLayer {
        let a = &self.config.agent;
        let mut layer = TimeoutLayer::new(Duration::from_secs(a.tool_timeout_secs));
        for (tool, &secs) in &a.tool_timeouts {
            layer = if secs > 0.0 {
                layer.with_timeout(tool, Duration::from_secs_f64(secs))
            } else {
                layer.without_timeout(tool)
            };
        }
        layer
    }

    /// The registry's limits of the configured model, when it is a known
    /// `provider:model`, with `[llm] max_tokens`: the token window's
    /// default budget. With fallback models, the smallest known context
    /// window of them all, since any of them may get the request.
    pub fn model_limits(&self) -> Option<(ModelLimits, Option<u32>)> {
        let section = self.config.llm.as_ref()?;
        let primary = section.model_ref().ok()??.limits()?;
        let smallest = section
            .fallback
            .iter()
            .filter_map(|m| ModelRef::parse(m).ok()??.limits())
            .fold(primary, |a, b| {
                if b.context_window < a.context_window {
                    b
                } else {
                    a
                }
            });
        Some((smallest, section.max_tokens))
    }

    /// The loop settings from `[agent]`.
    pub fn loop_config(&self) -> AgentLoopConfig {
        let a = &self.config.agent;
        AgentLoopConfig {
            agent_id: Arc::from(a.name.as_str()),
            system_prompt: a.system_prompt.as_deref().map(Arc::from),
            max_iterations: a.max_iterations,
            max_parallel_tools: a.max_parallel_tools,
            max_tool_calls: a.max_tool_calls,
            max_duration: a.max_turn_secs.map(Duration::from_secs_f64),
            tool_failure_mode: match a.tool_failure_mode {
                FailureMode::Continue => ToolFailureMode::Continue,
                FailureMode::Fail => ToolFailureMode::Fail,
            },
            ..AgentLoopConfig::default()
        }
    }

    /// The Agent of one conversation, owned by `owner`.
    pub fn agent(&self, context_id: &str, owner: &str) -> Result<Agent, AgentError> {
        self.agent_template()?.agent_owned_by(context_id, owner)
    }

    /// What the Agent of every conversation shares (the loop, its layers
    /// and tools, the stores), built once: `looopy serve` makes each new
    /// conversation's Agent from it. Build it after the last change to
    /// [`tools`](Self::tools).
    pub fn agent_template(&self) -> Result<AgentTemplate, AgentError> {
        self.agent_builder().template()
    }

    /// The configured Agent, not built yet: what
    /// [`agent_template`](Self::agent_template) builds, for a caller that
    /// adds to it (`looopy replay` puts the replay's hook on its loop).
    pub fn agent_builder(&self) -> AgentBuilder {
        let retry = self.retry.clone();
        let timeouts = self.tool_timeouts();
        let fallback = FallbackLayer::new(self.fallbacks.iter().cloned()).with_retry(retry.clone());
        let references = (!self.references.is_empty()).then(|| self.references.clone());
        let blob_content = self.blobs.clone().map(|store| {
            let max = self
                .config
                .artifacts
                .as_ref()
                .map_or(crate::artifacts::DEFAULT_MAX_UPLOAD, |a| a.max_upload_bytes);
            crate::artifacts::BlobContentHook::new(store, max)
        });
        let mut builder = AgentTemplate::builder()
            .llm(self.llm.clone())
            // The loop's default layers, with the configured values: the
            // model and the tools are wrapped there, once. The fallback
            // models come after the model's retries (none: no layer).
            .configure_loop(move |l| {
                let l = l.retry(retry).tool_timeouts(timeouts).llm_layer(fallback);
                let l = match blob_content {
                    Some(hook) => l.hook(hook),
                    None => l,
                };
                match references {
                    Some(references) => l.hook(McpReferenceHook(references)),
                    None => l,
                }
            })
            .loop_config(self.loop_config())
            .stores(&self.stores)
            .lock_ttl(self.config.durability.lease_ttl())
            .artifact_tools(self.config.agent.artifact_tools);
        if !self.config.store().outlives_process() {
            // A checkpoint in this process's memory dies with the turn it
            // would carry on (docs/durability.md).
            builder = builder.without_checkpoints();
        }
        if !self.config.records.enabled {
            builder = builder.without_records();
        }
        if !self.config.agent.approve_tools.is_empty() {
            builder = builder.require_approval(self.config.agent.approve_tools.iter().cloned());
        }
        builder = self.config.history.apply_for(builder, self.model_limits());
        for tool in &self.tools {
            builder = builder.tools(tool.clone());
        }
        builder
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn agent_limits_and_tool_timeouts_of_looopy_toml_reach_the_loop() {
        let config = Config::parse(
            "[agent]\ntool_timeout_secs = 7\nmax_tool_calls = 3\nmax_turn_secs = 90.5\n\
             tool_failure_mode = \"fail\"\n[agent.tool_timeouts]\nslow = 120\nendless = 0\n",
        )
        .unwrap();
        let app = App::build(config, &|_| None).await.unwrap();
        let l = app.loop_config();
        assert_eq!(l.max_tool_calls, Some(3));
        assert_eq!(l.max_duration, Some(Duration::from_secs_f64(90.5)));
        assert_eq!(l.tool_failure_mode, ToolFailureMode::Fail);
        let t = app.tool_timeouts();
        assert_eq!(t.limit_for("any"), Some(Duration::from_secs(7)));
        assert_eq!(t.limit_for("slow"), Some(Duration::from_secs(120)));
        assert_eq!(t.limit_for("endless"), None);

        let defaults = App::build(Config::parse("").unwrap(), &|_| None)
            .await
            .unwrap();
        let l = defaults.loop_config();
        assert_eq!((l.max_tool_calls, l.max_duration), (None, None));
        assert_eq!(l.tool_failure_mode, ToolFailureMode::Continue);
        assert_eq!(
            defaults.tool_timeouts().limit_for("any"),
            Some(Duration::from_secs(30))
        );
        assert!(Config::parse("[agent]\ntool_failure_mode = \"explode\"").is_err());
        assert!(Config::parse("[agent]\nmax_turn_secs = 0").is_err());
        assert!(!defaults.config.agent.artifact_tools, "off by default");
        let on = Config::parse("[agent]\nartifact_tools = true").unwrap();
        assert!(on.agent.artifact_tools);
    }

    #[tokio::test]
    async fn fallback_models_are_built_and_bound_the_token_window() {
        let keys = |name: &str| {
            matches!(name, "ANTHROPIC_API_KEY" | "OPENAI_API_KEY").then(|| "k".to_owned())
        };
        let config = Config::parse(
            "[llm]\nmodel = \"anthropic:claude-sonnet-4-5\"\nmax_tokens = 2048\n\
             fallback = [\"openai:gpt-4o-mini\", \"gemini:gemini-2.5-flash\"]\n",
        )
        .unwrap();
        let gemini_key =
            |name: &str| keys(name).or_else(|| (name == "GEMINI_API_KEY").then(|| "g".into()));
        let app = App::build(config, &gemini_key).await.unwrap();
        let names: Vec<&str> = app.fallbacks.iter().map(|m| m.model_name()).collect();
        assert_eq!(names, ["gpt-4o-mini", "gemini-2.5-flash"]);
        let (limits, answer) = app.model_limits().unwrap();
        assert_eq!(
            limits.context_window, 128_000,
            "gpt-4o-mini's, the smallest"
        );
        assert_eq!(answer, Some(2048));

        let bare =
            Config::parse("[llm]\nmodel = \"openai:gpt-4.1\"\nfallback = [\"gpt-4o\"]\n").unwrap();
        let err = App::build(bare, &keys).await.err().unwrap();
        assert!(
            format!("{err:#}").contains("`gpt-4o` names no provider"),
            "{err:#}"
        );

        let unknown = Config::parse("[llm]\nbase_url = \"http://a\"\nmodel = \"m\"\n").unwrap();
        let app = App::build(unknown, &|_| None).await.unwrap();
        assert!(app.fallbacks.is_empty());
        assert_eq!(app.model_limits(), None, "a bare model has no known limits");
    }

    #[tokio::test]
    async fn checkpoints_are_written_only_where_they_outlive_the_process() {
        let memory = App::build(Config::parse("").unwrap(), &|_| None)
            .await
            .unwrap();
        let agent = memory.agent_template().unwrap().agent("c").unwrap();
        assert!(agent.agent_loop().checkpoint_store().is_none());

        let redis = looopy_testkit::test_redis().unwrap();
        let prefix = format!("app-ckpt-{}", uuid::Uuid::new_v4().simple());
        let config = Config::parse(&format!(
            "[store]\nbackend = \"redis\"\nurl = \"{}\"\nkey_prefix = \"{prefix}\"\n",
            redis.url()
        ))
        .unwrap();
        let redis_app = App::build(config, &|_| None).await.unwrap();
        let agent = redis_app.agent_template().unwrap().agent("c").unwrap();
        assert!(agent.agent_loop().checkpoint_store().is_some());
    }

    #[test]
    fn approve_tools_are_read_and_empty_names_refused() {
        let config =
            Config::parse("[agent]\napprove_tools = [\"delete_file\", \"send_email\"]").unwrap();
        assert_eq!(config.agent.approve_tools, ["delete_file", "send_email"]);
        assert!(Config::parse("").unwrap().agent.approve_tools.is_empty());
        let e = Config::parse("[agent]\napprove_tools = [\" \"]").unwrap_err();
        assert!(e.to_string().contains("approve_tools"), "{e}");
        assert!(Config::parse("[agent]\napprove_tools = \"delete_file\"").is_err());
    }
}
