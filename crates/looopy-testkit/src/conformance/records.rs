//! [`RecordStore`] rules, and the records of typical turns written through
//! a [`Recorder`] on the store.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use looopy_core::record::{
    ExecutionRecord, ModelCall, RecordHeader, RecordOutcome, RecordPolicy, RecordedError, Recorder,
    StepKind,
};
use looopy_core::store::RecordStore;
use looopy_core::{
    LlmError, LlmRequest, LlmResponse, TaskState, ToolCall, ToolFailure, ToolResult, Usage,
};

use super::{UniqueIds, ok};

fn recorder(store: &Arc<dyn RecordStore>, task: &str, ctx: &str, resumed: bool) -> Recorder {
    Recorder::new(
        Arc::clone(store),
        RecordPolicy::default(),
        RecordHeader {
            task_id: task.to_owned(),
            context_id: ctx.to_owned(),
            agent_id: "agent".to_owned(),
            principal: Some("alice".to_owned()),
            turn_number: Some(1),
        },
        resumed,
    )
}

fn kinds(record: &ExecutionRecord) -> Vec<&'static str> {
    record
        .steps
        .iter()
        .map(|s| match &s.kind {
            StepKind::ModelCall(c) if c.error.is_some() => "model-error",
            StepKind::ModelCall(_) => "model",
            StepKind::Retry { .. } => "retry",
            StepKind::Fallback { .. } => "fallback",
            StepKind::ToolCall(c) if c.failure.is_some() => "tool-failed",
            StepKind::ToolCall(_) => "tool",
            StepKind::Compaction { .. } => "compaction",
            StepKind::Recovered { .. } => "recovered",
            StepKind::Decision { .. } => "decision",
            _ => "other",
        })
        .collect()
}

/// Checks a [`RecordStore`]: a record round-trips whole, `put` replaces
/// the record of its task and turn only (a two-turn task keeps both, `get`
/// returns the latest, `list_task` both oldest first, `delete` forgets
/// both), `list` is newest first within one context and honours its limit,
/// deletes say whether the record existed, the retention's count cap
/// forgets the oldest records, and the records a [`Recorder`] writes for a
/// tool-using turn (with a retried model call, a failed tool call and a
/// compaction) and for a turn recovered after its process died come back
/// with their steps in order, with their durations.
pub async fn record_store(store: Arc<dyn RecordStore>, ids: &UniqueIds) {
    let s = &*store;
    let ctx = ids.next("ctx");
    let other_ctx = ids.next("ctx");

    assert_eq!(
        ok(s.get(&ids.next("task")).await, "get of a missing record"),
        None
    );
    assert!(!ok(
        s.delete(&ids.next("task")).await,
        "delete of a missing record"
    ));
    assert!(ok(s.list(&ctx, 10).await, "list of an empty context").is_empty());

    // A turn: compaction, a model call that failed and was retried, a tool
    // call, a failed tool call, the answer.
    let task = ids.next("task");
    let rec = recorder(&store, &task, &ctx, false);
    rec.begin().await;
    assert!(
        ok(s.get(&task).await, "get of a started record").is_some(),
        "conformance: a record must be stored when its turn starts"
    );
    let t0 = Utc::now();
    let request = LlmRequest::default();
    rec.step(
        t0,
        Duration::from_millis(3),
        StepKind::Compaction {
            summarized_messages: 4,
            kept_messages: 2,
        },
    )
    .await;
    let failure = LlmError::Server {
        status: 503,
        message: "overloaded".into(),
        retry_after: None,
    };
    rec.model_call(
        t0 + TimeDelta::milliseconds(5),
        Duration::from_millis(7),
        ModelCall {
            provider: "scripted",
            model: "m-1",
            streamed: false,
            request: &request,
            result: Some(Err(&failure)),
        },
    )
    .await;
    rec.step(
        t0 + TimeDelta::milliseconds(12),
        Duration::from_millis(20),
        StepKind::Retry {
            retry: 1,
            delay: Duration::from_millis(20),
            error: RecordedError::from(&failure),
        },
    )
    .await;
    let calls = vec![
        ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#),
        ToolCall::new("c2", "explode", "{}"),
    ];
    let asked = LlmResponse::tool_calls("", calls.clone()).with_usage(Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Usage::default()
    });
    rec.model_call(
        t0 + TimeDelta::milliseconds(32),
        Duration::from_millis(9),
        ModelCall {
            provider: "scripted",
            model: "m-1",
            streamed: true,
            request: &request,
            result: Some(Ok(&asked)),
        },
    )
    .await;
    rec.tool_call(
        t0 + TimeDelta::milliseconds(41),
        Duration::from_millis(11),
        &calls[0],
        &ToolResult::text("c1", "3"),
    )
    .await;
    let mut failed = ToolResult::error("c2", "boom");
    failed.failure = Some(ToolFailure::Failed);
    rec.tool_call(
        t0 + TimeDelta::milliseconds(41),
        Duration::from_millis(13),
        &calls[1],
        &failed,
    )
    .await;
    let answer = LlmResponse::text("3, and explode failed");
    rec.model_call(
        t0 + TimeDelta::milliseconds(55),
        Duration::from_millis(4),
        ModelCall {
            provider: "scripted",
            model: "m-1",
            streamed: false,
            request: &request,
            result: Some(Ok(&answer)),
        },
    )
    .await;
    rec.finish(RecordOutcome {
        state: TaskState::Completed,
        end: "stop".into(),
    })
    .await;

    let stored = ok(s.get(&task).await, "get").expect("conformance: the record must be stored");
    assert_eq!(
        stored,
        rec.snapshot().await,
        "conformance: a record must come back with every field equal"
    );
    assert_eq!(
        kinds(&stored),
        [
            "compaction",
            "model-error",
            "retry",
            "model",
            "tool",
            "tool-failed",
            "model"
        ],
        "conformance: the steps must come back in the order they were written"
    );
    let ms: Vec<u128> = stored
        .steps
        .iter()
        .map(|s| s.duration.as_millis())
        .collect();
    assert_eq!(ms, [3, 7, 20, 9, 11, 13, 4], "conformance: step durations");
    assert_eq!(stored.principal.as_deref(), Some("alice"));
    assert!(stored.ended_at.is_some());
    assert_eq!(
        stored.outcome.as_ref().map(|o| o.state),
        Some(TaskState::Completed)
    );
    assert_eq!(stored.usage_by_model()["m-1"].input_tokens, 10);
    let tools: Vec<_> = stored.tool_calls().collect();
    assert_eq!(tools[1].failure, Some(ToolFailure::Failed));
    assert_eq!(
        tools[0].arguments.value(),
        Some(&serde_json::json!({"a": 1, "b": 2}))
    );

    // A turn whose process died mid-tool, carried on by another recorder.
    let crashed = ids.next("task");
    let first = recorder(&store, &crashed, &ctx, false);
    first.begin().await;
    first
        .model_call(
            Utc::now(),
            Duration::from_millis(2),
            ModelCall {
                provider: "scripted",
                model: "m-1",
                streamed: false,
                request: &request,
                result: Some(Ok(&asked)),
            },
        )
        .await;
    drop(first);
    let second = recorder(&store, &crashed, &ctx, true);
    second
        .tool_call(
            Utc::now(),
            Duration::from_millis(5),
            &calls[0],
            &ToolResult::text("c1", "3"),
        )
        .await;
    second
        .finish(RecordOutcome {
            state: TaskState::Completed,
            end: "stop".into(),
        })
        .await;
    let resumed = ok(s.get(&crashed).await, "get of a resumed record").expect("stored");
    assert_eq!(
        kinds(&resumed),
        ["model", "recovered", "tool"],
        "conformance: a recovered turn keeps the steps of the process that died, then marks where it resumed"
    );
    assert!(matches!(
        resumed.steps[1].kind,
        StepKind::Recovered {
            previous_steps: 1,
            ..
        }
    ));

    // Listing: newest first, one context, limited.
    let mut later = ExecutionRecord::new(ids.next("task"), &ctx, "agent");
    later.started_at = stored.started_at + TimeDelta::seconds(10);
    ok(s.put(&later).await, "put");
    ok(
        s.put(&ExecutionRecord::new(ids.next("task"), &other_ctx, "agent"))
            .await,
        "put",
    );
    let listed = ok(s.list(&ctx, 10).await, "list");
    assert_eq!(
        listed.len(),
        3,
        "conformance: list must hold a context's records only"
    );
    assert_eq!(
        listed[0].task_id, later.task_id,
        "conformance: newest first"
    );
    assert_eq!(ok(s.list(&ctx, 1).await, "list").len(), 1);
    assert!(ok(s.list(&ctx, 0).await, "list").is_empty());

    // Replace and delete.
    later.principal = Some("bob".into());
    ok(s.put(&later).await, "put (replace)");
    assert_eq!(ok(s.get(&later.task_id).await, "get"), Some(later.clone()));
    assert!(ok(s.delete(&later.task_id).await, "delete"));
    assert_eq!(ok(s.get(&later.task_id).await, "get after delete"), None);
    assert_eq!(ok(s.list(&ctx, 10).await, "list after delete").len(), 2);

    // Two turns of one task (a second message after input-required): each
    // keeps its record, written in either order.
    let two = ids.next("task");
    let mut asked_turn = ExecutionRecord::new(&two, &ctx, "agent");
    asked_turn.turn_number = Some(3);
    asked_turn.started_at = stored.started_at + TimeDelta::seconds(20);
    asked_turn.outcome = Some(RecordOutcome {
        state: TaskState::InputRequired,
        end: "input-required".into(),
    });
    let mut answered_turn = ExecutionRecord::new(&two, &ctx, "agent");
    answered_turn.turn_number = Some(4);
    answered_turn.started_at = stored.started_at + TimeDelta::seconds(30);
    ok(s.put(&answered_turn).await, "put of a task's second turn");
    ok(s.put(&asked_turn).await, "put of a task's first turn");
    asked_turn.ended_at = Some(asked_turn.started_at + TimeDelta::seconds(1));
    ok(s.put(&asked_turn).await, "put (replace of one turn)");
    assert_eq!(
        ok(s.get(&two).await, "get of a two-turn task"),
        Some(answered_turn.clone()),
        "conformance: get must return the task's latest turn"
    );
    assert_eq!(
        ok(s.get_turn(&two, 3).await, "get_turn"),
        Some(asked_turn.clone()),
        "conformance: a later turn's put must leave the earlier turn's record, and a put replaces its own turn only"
    );
    assert_eq!(
        ok(s.get_turn(&two, 5).await, "get_turn of a missing turn"),
        None
    );
    assert_eq!(
        ok(s.list_task(&two).await, "list_task"),
        [asked_turn.clone(), answered_turn.clone()],
        "conformance: list_task must return every turn, oldest first"
    );
    assert!(
        ok(
            s.list_task(&ids.next("task")).await,
            "list_task of a missing task"
        )
        .is_empty()
    );
    let listed = ok(s.list(&ctx, 10).await, "list with a two-turn task");
    assert_eq!(
        listed.iter().filter(|r| r.task_id == two).count(),
        2,
        "conformance: list must hold a record per turn"
    );
    assert!(ok(s.delete(&two).await, "delete of a two-turn task"));
    assert!(
        ok(s.list_task(&two).await, "list_task after delete").is_empty(),
        "conformance: delete must forget every turn of the task"
    );
    assert_eq!(ok(s.get_turn(&two, 3).await, "get_turn after delete"), None);
    assert_eq!(ok(s.get(&two).await, "get after delete"), None);
    assert_eq!(ok(s.list(&ctx, 10).await, "list after delete").len(), 2);

    // Retention: the count cap forgets the oldest records.
    if let Some(max) = s.retention().max_per_context
        && max <= 300
    {
        let capped = ids.next("ctx");
        let base = Utc::now();
        // Two turns per task: the cap counts records (turns).
        let mut first_id = String::new();
        let mut task_id = String::new();
        for i in 0..=max {
            if i % 2 == 0 {
                task_id = ids.next("task");
            }
            let mut r = ExecutionRecord::new(&task_id, &capped, "agent");
            r.turn_number = Some(u64::try_from(i % 2).unwrap_or(0) + 1);
            r.started_at = base + TimeDelta::milliseconds(i64::try_from(i).unwrap_or(0));
            if i == 0 {
                first_id.clone_from(&r.task_id);
            }
            ok(s.put(&r).await, "put (retention)");
        }
        assert_eq!(
            ok(
                s.get_turn(&first_id, 1).await,
                "get of a record past the cap"
            ),
            None,
            "conformance: a put past max_per_context must forget the oldest record"
        );
        if max > 1 {
            assert!(
                ok(s.get_turn(&first_id, 2).await, "get of a kept turn").is_some(),
                "conformance: the count cap forgets the oldest turn, not its task's later ones"
            );
        }
        assert_eq!(ok(s.list(&capped, max + 10).await, "list").len(), max);
    }
    // Retention: a record older than max_age is not returned.
    if let Some(age) = s.retention().max_age {
        let mut old = ExecutionRecord::new(ids.next("task"), &ctx, "agent");
        old.started_at =
            Utc::now() - TimeDelta::from_std(age).unwrap_or(TimeDelta::MAX) - TimeDelta::seconds(5);
        ok(s.put(&old).await, "put of an aged record");
        assert_eq!(
            ok(s.get(&old.task_id).await, "get of an aged record"),
            None,
            "conformance: a record older than max_age must not be returned"
        );
    }
}
