//! A turn's end commits whole or not at all: when one of its writes fails
//! (here the agent state, refused by a trigger), none of the others is
//! seen (messages, artifacts, the lease's release, the checkpoint's
//! deletion), and the same end succeeds once the fault is gone.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::{
    AgentState, ArtifactWrite, LeaseRequest, TaskCheckpoint, TurnArtifacts, TurnBegin, TurnBegun,
    TurnCommit,
};
use looopy_core::{Artifact, Message, Part, StoreError};
use looopy_testkit::checkpoints;

fn state(ctx: &str) -> Arc<AgentState> {
    Arc::new(AgentState {
        turn_count: 1,
        ..checkpoints::ready_state(ctx, None)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_end_writes_nothing_and_keeps_the_lease() {
    let Some(pg) = support::postgres("a_failed_turn_end_writes_nothing") else {
        return;
    };
    let backend = support::backend(support::config(pg.url())).await;
    let stores = looopy_stores_postgres::stores(backend.clone());
    let turns = stores.turns.clone().expect("a turn store");
    let (ctx, task, owner) = ("ctx", "task", "owner-1");

    stores
        .messages
        .append(ctx, &[Message::user("before")])
        .await
        .unwrap();
    let begun = turns
        .begin_turn(TurnBegin {
            context_id: ctx,
            lease: Some(LeaseRequest {
                owner,
                task_id: Some(task),
                ttl: Duration::from_secs(60),
            }),
            load_state: true,
            known: None,
            input: &[],
        })
        .await
        .unwrap();
    assert!(matches!(begun, TurnBegun::Begun(_)), "{begun:?}");
    let checkpoint = TaskCheckpoint {
        turn_start: 1,
        ..checkpoints::working(ctx, task, vec![Message::user("before")].into())
    };
    stores.checkpoints.save(&checkpoint).await.unwrap();

    // The agent state cannot be written.
    for sql in [
        "CREATE FUNCTION refuse_state() RETURNS trigger LANGUAGE plpgsql AS
         $$ BEGIN RAISE EXCEPTION 'agent state refused'; END $$",
        "CREATE TRIGGER refuse_state BEFORE INSERT OR UPDATE ON agents
         FOR EACH ROW EXECUTE FUNCTION refuse_state()",
    ] {
        sqlx::query(sql).execute(backend.pool()).await.unwrap();
    }
    let produced = vec![
        Arc::new(Message::user("input")),
        Arc::new(Message::assistant("answer")),
    ];
    let writes = vec![ArtifactWrite::Put(Artifact::new(
        "answer",
        vec![Part::text("answer")],
    ))];
    let end_state = state(ctx);
    let commit = TurnCommit {
        context_id: ctx,
        lease_owner: Some(owner),
        messages: &produced,
        state: Some(&end_state),
        forget_checkpoint: Some(task),
        artifacts: Some(TurnArtifacts {
            task_id: task,
            writes: &writes,
        }),
    };
    let error = turns
        .commit_turn(commit)
        .await
        .expect_err("the state is refused");
    assert!(
        matches!(&error, StoreError::Backend { message } if message.contains("agent state refused")),
        "{error:?}"
    );
    assert_eq!(
        stores.messages.count(ctx).await.unwrap(),
        1,
        "no message was appended"
    );
    assert_eq!(stores.agents.load(ctx).await.unwrap(), None);
    assert!(
        stores.artifacts.list(ctx).await.unwrap().is_empty(),
        "no artifact was written"
    );
    assert_eq!(
        stores.locks.lease(ctx).await.unwrap().map(|l| l.owner),
        Some(owner.to_owned()),
        "the lease is still the turn's"
    );
    assert!(
        stores.checkpoints.load(task).await.unwrap().is_some(),
        "the checkpoint stays"
    );

    // The fault gone, the same end goes through whole.
    sqlx::query("DROP TRIGGER refuse_state ON agents")
        .execute(backend.pool())
        .await
        .unwrap();
    turns.commit_turn(commit).await.unwrap();
    let history = stores.messages.load(ctx).await.unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(
        history[1..],
        [(*produced[0]).clone(), (*produced[1]).clone()]
    );
    assert_eq!(
        stores.agents.load(ctx).await.unwrap().as_ref(),
        Some(&*end_state)
    );
    assert_eq!(stores.artifacts.list(ctx).await.unwrap().len(), 1);
    assert_eq!(
        stores.locks.lease(ctx).await.unwrap(),
        None,
        "the lease was released"
    );
    assert_eq!(stores.checkpoints.load(task).await.unwrap(), None);
    support::drop_schema(&backend).await;
}
