//! When a loop lists its tools: providers whose tools are fixed once, for
//! every turn; any other provider, and a turn's own tools, at every turn.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use looopy_core::{
    History, LlmResponse, Message, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
use looopy_loop::{AgentLoop, TurnInput, TurnSettings};
use looopy_testkit::ScriptedLlm;
use support::*;

/// One tool, `name`; counts how often it is listed.
struct Counted {
    name: &'static str,
    fixed: bool,
    listed: AtomicUsize,
}

impl Counted {
    fn new(name: &'static str, fixed: bool) -> Arc<Self> {
        Arc::new(Counted {
            name,
            fixed,
            listed: AtomicUsize::new(0),
        })
    }

    fn listed(&self) -> usize {
        self.listed.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ToolProvider for Counted {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        self.listed.fetch_add(1, Ordering::SeqCst);
        Ok(vec![ToolDefinition::new(
            self.name,
            "test tool",
            serde_json::json!({"type": "object"}),
        )])
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        ToolResult::text(&call.id, self.name)
    }

    fn tools_are_fixed(&self) -> bool {
        self.fixed
    }
}

fn answers(n: usize) -> ScriptedLlm {
    (0..n).fold(ScriptedLlm::new(), |llm, _| {
        llm.respond(LlmResponse::text("ok"))
    })
}

async fn turns(agent: &AgentLoop, n: usize, input: impl Fn() -> TurnInput) {
    for i in 0..n {
        let history = History::from(vec![Message::user("hi")]);
        let cx = TurnContext::new(format!("task-{i}"), "ctx");
        drain(agent.start_turn_with(history, cx, input())).await;
    }
}

fn offered(llm: &ScriptedLlm) -> Vec<Vec<String>> {
    llm.requests()
        .iter()
        .map(|r| r.tools.iter().map(|t| t.name.clone()).collect())
        .collect()
}

#[tokio::test]
async fn fixed_tools_are_listed_once_for_every_turn_of_the_loop_and_its_clones() {
    let (a, b) = (Counted::new("a", true), Counted::new("b", true));
    let llm = answers(3);
    let agent = AgentLoop::builder(llm.clone())
        .tools(a.clone())
        .tools(b.clone())
        .build();
    turns(&agent, 2, || TurnSettings::new().into()).await;
    turns(&agent.clone(), 1, || TurnSettings::new().into()).await;
    assert_eq!((a.listed(), b.listed()), (1, 1));
    assert_eq!(offered(&llm), vec![vec!["a", "b"]; 3]);
}

#[tokio::test]
async fn one_provider_that_may_change_has_every_provider_listed_at_every_turn() {
    let (fixed, changing) = (Counted::new("a", true), Counted::new("b", false));
    let llm = answers(2);
    let agent = AgentLoop::builder(llm.clone())
        .tools(fixed.clone())
        .tools(changing.clone())
        .build();
    turns(&agent, 2, || TurnSettings::new().into()).await;
    assert_eq!((fixed.listed(), changing.listed()), (2, 2));
    assert_eq!(offered(&llm), vec![vec!["a", "b"]; 2]);
}

#[tokio::test]
async fn a_turns_own_tools_are_listed_in_that_turn_beside_the_fixed_ones() {
    let fixed = Counted::new("a", true);
    let extra = Counted::new("extra", true);
    let llm = answers(3);
    let agent = AgentLoop::builder(llm.clone()).tools(fixed.clone()).build();
    turns(&agent, 1, || TurnSettings::new().into()).await;
    let with_extra = extra.clone();
    turns(&agent, 1, move || TurnInput {
        tools: Some(with_extra.clone()),
        ..TurnSettings::new().into()
    })
    .await;
    turns(&agent, 1, || TurnSettings::new().into()).await;
    assert_eq!(
        offered(&llm),
        vec![vec!["a"], vec!["a", "extra"], vec!["a"]],
        "the turn's own tools are offered in that turn only"
    );
    assert_eq!(extra.listed(), 1);
    assert_eq!(
        fixed.listed(),
        1,
        "the loop's fixed tools are listed once, also beside a turn's own"
    );
}

#[tokio::test]
async fn a_turns_own_tool_named_as_a_fixed_one_fails_the_turn() {
    let agent = AgentLoop::builder(answers(1))
        .tools(Counted::new("a", true))
        .build();
    let history = History::from(vec![Message::user("hi")]);
    let input = TurnInput {
        tools: Some(Counted::new("a", true)),
        ..TurnSettings::new().into()
    };
    let events = drain(agent.start_turn_with(history, TurnContext::new("t", "c"), input)).await;
    let last = events.last().unwrap();
    assert_eq!(last.state(), Some(looopy_core::TaskState::Failed));
}
