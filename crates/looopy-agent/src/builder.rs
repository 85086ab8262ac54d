//! [`AgentBuilder`]: how an [`Agent`] is configured.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::record::RecordPolicy;
use looopy_core::store::RecordStore;
use looopy_core::store::{
    AgentStateStore, ArtifactStore, CheckpointStore, MessageStore, SeparateStores, Stores,
    TurnLock, TurnStore,
};
use looopy_core::{LlmProvider, ToolProvider};
use looopy_loop::tool_output::ToolOutputCache;
use looopy_loop::{AgentLoop, AgentLoopBuilder, AgentLoopConfig, CountedRequests};

use crate::agent::Agent;
use crate::artifact_tools::ArtifactTools;
use crate::compaction::{CompactionConfig, TurnSummariser};
use crate::config::Settings;
use crate::error::AgentError;
use crate::parts::Parts;
use crate::template::AgentTemplate;
use crate::tokens::{SharedCounter, TokenCounter};
use crate::window::{WindowConfig, WindowEstimate, WindowedLlm};

impl Agent {
    /// Starts configuring an agent for the conversation `context_id`.
    pub fn builder(context_id: impl Into<Arc<str>>) -> AgentBuilder {
        AgentBuilder::new(context_id.into())
    }
}

impl AgentTemplate {
    /// A builder for a template: [`Agent::builder`]'s settings, finished
    /// with [`AgentBuilder::template`].
    pub fn builder() -> AgentBuilder {
        Agent::builder("")
    }
}

/// Builds an [`Agent`] for one conversation (`contextId`).
///
/// Required: a model ([`llm`](Self::llm)) or a prebuilt loop
/// ([`agent_loop`](Self::agent_loop)), a [`MessageStore`] and an
/// [`ArtifactStore`]. Everything else is optional.
pub struct AgentBuilder {
    context_id: Arc<str>,
    llm: Option<Arc<dyn LlmProvider>>,
    tools: Vec<Arc<dyn ToolProvider>>,
    loop_config: Option<AgentLoopConfig>,
    agent_loop: Option<AgentLoop>,
    task_store: Option<Arc<dyn CheckpointStore>>,
    messages: Option<Arc<dyn MessageStore>>,
    artifacts: Option<Arc<dyn ArtifactStore>>,
    states: Option<Arc<dyn AgentStateStore>>,
    turn_lock: Option<Arc<dyn TurnLock>>,
    turns: Option<Arc<dyn TurnStore>>,
    records: Option<Arc<dyn RecordStore>>,
    record_policy: RecordPolicy,
    settings: Settings,
    token_counter: Option<Arc<dyn TokenCounter>>,
    customize: Vec<LoopCustomizer>,
}

type LoopCustomizer = Box<dyn FnOnce(AgentLoopBuilder) -> AgentLoopBuilder + Send>;

impl AgentBuilder {
    pub(crate) fn new(context_id: Arc<str>) -> Self {
        AgentBuilder {
            context_id,
            llm: None,
            tools: Vec::new(),
            loop_config: None,
            agent_loop: None,
            task_store: None,
            messages: None,
            artifacts: None,
            states: None,
            turn_lock: None,
            turns: None,
            records: None,
            record_policy: RecordPolicy::default(),
            settings: Settings::default(),
            token_counter: None,
            customize: Vec::new(),
        }
    }

    /// The model. With a prebuilt loop it is used only for compaction
    /// summaries (the loop's own model is used otherwise).
    /// A model shared with other agents goes in as its `Arc` (`Arc<P>` is
    /// a provider too).
    pub fn llm(mut self, llm: impl LlmProvider + 'static) -> Self {
        self.llm = Some(Arc::new(llm));
        self
    }

    /// Adds a tool provider. Tool names must be unique across providers.
    /// A provider shared with other agents goes in as its `Arc` (`Arc<P>`
    /// is a provider too).
    pub fn tools(mut self, provider: impl ToolProvider + 'static) -> Self {
        self.tools.push(Arc::new(provider));
        self
    }

    /// Loop settings (system prompt, iteration limit, streaming...).
    pub fn loop_config(mut self, config: AgentLoopConfig) -> Self {
        self.loop_config = Some(config);
        self
    }

    /// Sets the system prompt of the loop settings.
    pub fn system_prompt(mut self, prompt: impl Into<Arc<str>>) -> Self {
        self.loop_config
            .get_or_insert_with(AgentLoopConfig::default)
            .system_prompt = Some(prompt.into());
        self
    }

    /// Sets the iteration limit of the loop settings.
    pub fn max_iterations(mut self, n: u32) -> Self {
        self.loop_config
            .get_or_insert_with(AgentLoopConfig::default)
            .max_iterations = n;
        self
    }

    /// Asks a person before any call of these tools runs (a
    /// [`RequireApproval`](looopy_loop::hooks::RequireApproval) hook on the
    /// loop): the turn ends `input-required` with the question, and the
    /// user's next message approves, denies or edits the call. For a policy
    /// of your own, add a hook whose `approve_tool` returns
    /// [`Approval::Ask`](looopy_loop::hooks::Approval::Ask) (for instance an
    /// [`ApproveFn`](looopy_loop::hooks::ApproveFn)) with
    /// [`configure_loop`](Self::configure_loop). Like `configure_loop`, not
    /// with a prebuilt [`agent_loop`](Self::agent_loop): add the hook to
    /// that loop instead.
    pub fn require_approval<I, S>(self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let hook = looopy_loop::hooks::RequireApproval::new(tools);
        self.configure_loop(move |b| b.hook(hook))
    }

    /// Adjusts the loop the Agent builds (hooks, tool-output cache...):
    /// `f` gets the loop builder after the model, tools, settings and task
    /// store were applied.
    pub fn configure_loop(
        mut self,
        f: impl FnOnce(AgentLoopBuilder) -> AgentLoopBuilder + Send + 'static,
    ) -> Self {
        self.customize.push(Box::new(f));
        self
    }

    /// Every store of the bundle: checkpoints, history, artifacts,
    /// lifecycle metadata and the turn lease (the same as
    /// [`task_store`](Self::task_store), [`message_store`](Self::message_store),
    /// [`artifact_store`](Self::artifact_store),
    /// [`state_store`](Self::state_store) and [`turn_lock`](Self::turn_lock)
    /// with each of its stores, and [`turn_store`](Self::turn_store) when
    /// the bundle has one; a later call of one of those replaces that store
    /// only).
    pub fn stores(self, stores: &Stores) -> Self {
        let mut b = self
            .task_store(stores.checkpoints.clone())
            .message_store(stores.messages.clone())
            .artifact_store(stores.artifacts.clone())
            .state_store(stores.agents.clone())
            .turn_lock(stores.locks.clone());
        if let Some(turns) = &stores.turns {
            b = b.turn_store(turns.clone());
        }
        b.records = stores.records.clone();
        b
    }

    /// Where each turn's execution record is written (the bundle's
    /// `Stores::records`, set by [`stores`](Self::stores)): every model
    /// attempt, tool call, retry, fallback, compaction and recovery, read
    /// back with [`Agent::record`](crate::Agent::record).
    pub fn record_store(mut self, store: Arc<dyn RecordStore>) -> Self {
        self.records = Some(store);
        self
    }

    /// Records no turn, also when [`stores`](Self::stores) gave a record
    /// store.
    pub fn without_records(mut self) -> Self {
        self.records = None;
        self
    }

    /// What execution records keep of payloads: the size cap and the
    /// redaction rules ([`RecordPolicy::default`] unless set).
    pub fn record_policy(mut self, policy: RecordPolicy) -> Self {
        self.record_policy = policy;
        self
    }

    /// Loop checkpoints go here (crash safety within a turn).
    pub fn task_store(mut self, store: Arc<dyn CheckpointStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// Keeps no loop checkpoints, also when [`stores`](Self::stores) gave
    /// a checkpoint store (a later [`task_store`](Self::task_store) sets
    /// one again). A turn then cannot be carried on after its process dies:
    /// [`Agent::resume_turn`] ends it with an error saying so. For stores
    /// that die with the process anyway, such as the memory bundle behind a
    /// server, where a checkpoint could only be read by the process that
    /// wrote it and each one costs the turn a copy of its progress.
    pub fn without_checkpoints(mut self) -> Self {
        self.task_store = None;
        self
    }

    /// A prebuilt loop instead of a model, tools and loop settings. The
    /// sliding window is then applied to the history at the start of each
    /// turn only; wrap the loop's model in a [`WindowedLlm`] to apply it to
    /// every call.
    pub fn agent_loop(mut self, agent_loop: AgentLoop) -> Self {
        self.agent_loop = Some(agent_loop);
        self
    }

    /// The conversation history (required).
    pub fn message_store(mut self, store: Arc<dyn MessageStore>) -> Self {
        self.messages = Some(store);
        self
    }

    /// Where artifacts go (required).
    pub fn artifact_store(mut self, store: Arc<dyn ArtifactStore>) -> Self {
        self.artifacts = Some(store);
        self
    }

    /// Where lifecycle metadata (turn count, last activity, compactions)
    /// is kept. Without one it lives in memory only.
    pub fn state_store(mut self, store: Arc<dyn AgentStateStore>) -> Self {
        self.states = Some(store);
        self
    }

    /// A lease so that one turn runs at a time for the context across
    /// processes (the in-agent check always applies).
    pub fn turn_lock(mut self, lock: Arc<dyn TurnLock>) -> Self {
        self.turn_lock = Some(lock);
        self
    }

    /// How a turn's start and end reach the stores, each as one operation
    /// (the Redis stores' `Stores::turns`: one round trip each).
    /// It must work on the same stores as the message, state and
    /// checkpoint stores and the turn lock given here. Without one, the
    /// Agent calls those stores one after the other
    /// ([`SeparateStores`]).
    pub fn turn_store(mut self, store: Arc<dyn TurnStore>) -> Self {
        self.turns = Some(store);
        self
    }

    /// Time-to-live of the turn lease (default 30 s, renewed every third).
    pub fn lock_ttl(mut self, ttl: Duration) -> Self {
        self.settings.lock_ttl = ttl;
        self
    }

    /// Save messages and state after each turn (default true). When off,
    /// they are kept in memory until [`Agent::save_state`], `pause` or
    /// `shutdown`; artifacts are always written as they stream.
    pub fn auto_save(mut self, yes: bool) -> Self {
        self.settings.auto_save = yes;
        self
    }

    /// Limits what the model is sent (default: the newest
    /// [`DEFAULT_WINDOW_MESSAGES`](crate::DEFAULT_WINDOW_MESSAGES) messages,
    /// tool calls kept with their results; [`WindowConfig::unbounded`] sends
    /// the whole history).
    pub fn window(mut self, window: WindowConfig) -> Self {
        self.settings.window = window;
        self
    }

    /// How tokens are estimated, by the window and by compaction (default
    /// [`HeuristicCounter`](crate::tokens::HeuristicCounter)). Overrides the
    /// counter of [`window`](Self::window) and
    /// [`compaction`](Self::compaction), whatever the order of the calls. A
    /// [`CalibratedCounter`](crate::tokens::CalibratedCounter) learns from
    /// the usage of the calls the window passes on.
    pub fn token_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.token_counter = Some(counter);
        self
    }

    /// Tool results longer than `max_chars` characters are stored as
    /// artifacts in the artifact store; the model sees the first
    /// `preview_chars` and pages through the rest with `read_tool_output`
    /// (default: on, [`DEFAULT_TOOL_OUTPUT_MAX_CHARS`](crate::DEFAULT_TOOL_OUTPUT_MAX_CHARS)
    /// and [`DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS`](crate::DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS)).
    /// Applies to the loop the Agent builds, not to a prebuilt one.
    pub fn tool_output_cache(mut self, max_chars: usize, preview_chars: usize) -> Self {
        self.settings.tool_output = Some((max_chars, preview_chars));
        self
    }

    /// Tool results go to the model whole, however long.
    pub fn without_tool_output_cache(mut self) -> Self {
        self.settings.tool_output = None;
        self
    }

    /// Compaction settings (default: no automatic compaction).
    pub fn compaction(mut self, compaction: CompactionConfig) -> Self {
        self.settings.compaction = compaction;
        self
    }

    /// Gives every turn's tools `value` as the dependency of type `T` (a
    /// database pool, a client, a feature flag), which a tool reads with
    /// `cx.dep::<T>()` ([`TurnContext::dep`](looopy_core::TurnContext::dep)).
    /// A turn overrides it with [`TurnOptions::with_dep`](crate::TurnOptions::with_dep).
    /// Works with a prebuilt loop too (on top of the loop's own).
    pub fn dep<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.settings.deps = std::mem::take(&mut self.settings.deps).with(value);
        self
    }

    /// The principal that owns the conversation (recorded in the state).
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.settings.owner = Some(owner.into());
        self
    }

    /// Offers the model the artifact tools (`create_artifact`,
    /// `append_to_artifact`, `replace_artifact`: see
    /// [`artifact_tools`](crate::artifact_tools)); off by default. Not with a
    /// prebuilt loop (give it the tools yourself).
    pub fn artifact_tools(mut self, yes: bool) -> Self {
        self.settings.artifact_tools = yes;
        self
    }

    /// The agent.
    pub fn build(self) -> Result<Agent, AgentError> {
        if self.context_id.is_empty() {
            return Err(AgentError::Config("the context id is empty".into()));
        }
        let context_id = self.context_id.clone();
        Ok(Agent::from_parts(context_id, Arc::new(self.parts()?), None))
    }

    /// What the Agent of every conversation can share, built once: the
    /// loop with its layers and tools, the stores and the settings (the
    /// builder's context id is not used). See [`AgentTemplate`].
    pub fn template(self) -> Result<AgentTemplate, AgentError> {
        Ok(AgentTemplate::new(self.parts()?))
    }

    fn parts(mut self) -> Result<Parts, AgentError> {
        if let Some(counter) = self.token_counter.take() {
            let shared = SharedCounter::new(counter);
            self.settings.window.counter = shared.clone();
            self.settings.compaction.counter = shared;
        }
        let messages = self
            .messages
            .ok_or_else(|| AgentError::Config("a message store is required".into()))?;
        let artifacts = self
            .artifacts
            .ok_or_else(|| AgentError::Config("an artifact store is required".into()))?;
        let (agent_loop, summarizer) = match self.agent_loop {
            Some(agent_loop) => {
                if !self.tools.is_empty()
                    || self.loop_config.is_some()
                    || self.task_store.is_some()
                    || !self.customize.is_empty()
                    || self.settings.artifact_tools
                {
                    return Err(AgentError::Config(
                        "give either a prebuilt AgentLoop or tools/loop settings/task store, \
                         not both"
                            .into(),
                    ));
                }
                let summarizer = self.llm.unwrap_or_else(|| agent_loop.llm().clone());
                (agent_loop, summarizer)
            }
            None => {
                let llm = self.llm.ok_or_else(|| {
                    AgentError::Config("a model (llm) or an agent loop is required".into())
                })?;
                let model: Arc<dyn LlmProvider> = if self.settings.window.is_unbounded() {
                    llm.clone()
                } else {
                    self.settings.window_in_model = true;
                    Arc::new(WindowedLlm::new(llm.clone(), self.settings.window.clone()))
                };
                let mut config = self.loop_config.unwrap_or_default();
                let window = &self.settings.window;
                if config.context_window_tokens.is_none()
                    && let Some(max) = window.max_tokens
                {
                    // The window's token budget is the most a request may
                    // have: the context guard checks each request of a
                    // turn against it.
                    config.context_window_tokens = Some(u32::try_from(max).unwrap_or(u32::MAX));
                    config
                        .context_reserve_tokens
                        .get_or_insert(u32::try_from(window.reserve_tokens).unwrap_or(u32::MAX));
                }
                let mut builder = AgentLoopBuilder::new(model).config(config);
                builder = if self.settings.window_in_model {
                    builder.request_estimator(Arc::new(WindowEstimate(window.clone())))
                } else {
                    builder.request_estimator(Arc::new(CountedRequests(window.counter.clone())))
                };
                if self.settings.compaction.auto {
                    builder = builder.turn_compactor(Arc::new(TurnSummariser::new(
                        self.settings.compaction.clone(),
                    )));
                }
                for tools in self.tools {
                    builder = builder.tools(tools);
                }
                if self.settings.artifact_tools {
                    builder = builder.tools(ArtifactTools::new(artifacts.clone()));
                }
                if let Some(store) = self.task_store {
                    builder = builder.task_store(store);
                }
                if let Some((max_chars, preview_chars)) = self.settings.tool_output {
                    let cache = ToolOutputCache::new(artifacts.clone(), max_chars, preview_chars);
                    builder = builder.tool_output_cache(cache);
                }
                for f in self.customize {
                    builder = f(builder);
                }
                let agent_loop = builder.build();
                // The summary calls of compaction get the loop's model layers
                // (retry) too, but not the window: they send the transcript.
                let summarizer = agent_loop.layer_llm(llm);
                (agent_loop, summarizer)
            }
        };
        // The window applied to the history at the start of a turn sees no
        // request yet: the loop's system prompt is held back from its token
        // budget here. (A `WindowedLlm` measures it, and the tools, on each
        // request instead.)
        if self.settings.window.max_tokens.is_some()
            && let Some(prompt) = &agent_loop.config().system_prompt
        {
            let window = &mut self.settings.window;
            window.reserve_tokens += window.counter().system_prompt(prompt);
        }
        let turns = self.turns.unwrap_or_else(|| {
            Arc::new(SeparateStores {
                messages: messages.clone(),
                states: self.states.clone(),
                lock: self.turn_lock.clone(),
                checkpoints: agent_loop.checkpoint_store().cloned(),
            })
        });
        Ok(Parts {
            agent_loop,
            summarizer,
            turns,
            messages,
            artifacts,
            states: self.states,
            turn_lock: self.turn_lock,
            settings: self.settings,
            records: self.records,
            record_policy: self.record_policy,
        })
    }
}
