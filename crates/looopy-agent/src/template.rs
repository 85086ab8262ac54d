//! [`AgentTemplate`]: the parts of an Agent that do not depend on its
//! conversation, built once and shared by the Agent of every conversation.

use std::sync::Arc;

use crate::agent::Agent;
use crate::error::AgentError;
use crate::parts::Parts;

/// What the Agents of many conversations share: the loop with its model
/// layers and tools, the stores, the window, compaction and the other
/// settings. A server that makes an Agent for each new conversation builds
/// them once here ([`AgentBuilder::template`](crate::AgentBuilder::template)) instead of once per
/// conversation: making an Agent from a template only sets up its own
/// state, and every Agent made from it holds the same loop and layers.
///
/// ```
/// use looopy_agent::AgentTemplate;
/// use looopy_testkit::ScriptedLlm;
///
/// let stores = looopy_stores_memory::stores();
/// let template = AgentTemplate::builder()
///     .llm(ScriptedLlm::new())
///     .stores(&stores)
///     .template()
///     .unwrap();
/// let alice = template.agent_owned_by("conversation-1", "alice").unwrap();
/// let bob = template.agent_owned_by("conversation-2", "bob").unwrap();
/// assert_eq!(alice.context_id(), "conversation-1");
/// // One loop for both.
/// assert!(std::ptr::eq(alice.agent_loop().config(), bob.agent_loop().config()));
/// ```
#[derive(Clone)]
pub struct AgentTemplate {
    parts: Arc<Parts>,
}

impl AgentTemplate {
    pub(crate) fn new(parts: Parts) -> Self {
        AgentTemplate {
            parts: Arc::new(parts),
        }
    }

    /// The Agent of the conversation `context_id`, with the template's
    /// owner (if it was given one).
    pub fn agent(&self, context_id: &str) -> Result<Agent, AgentError> {
        self.make(context_id, None)
    }

    /// The Agent of the conversation `context_id`, owned by `owner`.
    pub fn agent_owned_by(&self, context_id: &str, owner: &str) -> Result<Agent, AgentError> {
        self.make(context_id, Some(owner))
    }

    fn make(&self, context_id: &str, owner: Option<&str>) -> Result<Agent, AgentError> {
        if context_id.is_empty() {
            return Err(AgentError::Config("the context id is empty".into()));
        }
        Ok(Agent::from_parts(
            Arc::from(context_id),
            Arc::clone(&self.parts),
            owner.map(str::to_owned),
        ))
    }
}

impl std::fmt::Debug for AgentTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTemplate")
            .field("agent_id", &self.parts.agent_loop.config().agent_id)
            .finish_non_exhaustive()
    }
}
