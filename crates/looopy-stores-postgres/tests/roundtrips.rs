//! An Agent turn's store operations on PostgreSQL are one round trip each,
//! whatever the history's length: its start and its end (one function
//! call each) and a checkpoint save, counted by a TCP proxy in front of
//! the server.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use looopy_core::Message;
use looopy_core::store::{
    AgentState, BegunTurn, HistoryMark, LeaseRequest, LoadedHistory, TaskCheckpoint, TurnBegin,
    TurnBegun, TurnCommit, TurnStore,
};
use looopy_testkit::checkpoints;

fn state(ctx: &str) -> Arc<AgentState> {
    Arc::new(AgentState {
        turn_count: 1,
        ..checkpoints::ready_state(ctx, None)
    })
}

fn checkpoint(ctx: &str, task: &str) -> TaskCheckpoint {
    checkpoints::working(ctx, task, vec![Message::user("go")].into())
}

async fn begin(
    turns: &dyn TurnStore,
    ctx: &str,
    task: &str,
    known: Option<&HistoryMark>,
) -> BegunTurn {
    let input = [Message::user("go")];
    let begun = turns
        .begin_turn(TurnBegin {
            context_id: ctx,
            lease: Some(LeaseRequest {
                owner: "owner",
                task_id: Some(task),
                ttl: Duration::from_secs(60),
            }),
            load_state: true,
            known,
            input: &input,
        })
        .await;
    match begun {
        Ok(TurnBegun::Begun(begun)) => *begun,
        other => panic!("the turn did not start: {other:?}"),
    }
}

async fn commit(turns: &dyn TurnStore, ctx: &str, task: &str, messages: &[Arc<Message>]) {
    let end_state = state(ctx);
    let committed = turns
        .commit_turn(TurnCommit {
            context_id: ctx,
            lease_owner: Some("owner"),
            messages,
            state: Some(&end_state),
            forget_checkpoint: Some(task),
            artifacts: None,
        })
        .await;
    if let Err(e) = committed {
        panic!("the turn did not end: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_one_round_trip_per_operation_at_any_history_length() {
    let Some(pg) = support::postgres("a_turn_is_one_round_trip_per_operation") else {
        return;
    };
    let proxy = support::RoundTrips::start(pg.url()).await;
    let backend = support::backend(support::config(&proxy.url)).await;
    let stores = looopy_stores_postgres::stores(backend.clone());
    let turns = stores.turns.clone().expect("a turn store");
    for n in [10, 1000] {
        let ctx = format!("ctx-{n}");
        let history: Vec<Message> = (0..n).map(|i| Message::user(format!("m{i}"))).collect();
        stores.messages.append(&ctx, &history).await.unwrap();

        // A first turn: the Agent starts, with the whole history.
        let first = begin(&*turns, &ctx, "t1", None).await;
        let LoadedHistory::Whole {
            messages,
            mark: Some(mark),
        } = first.history
        else {
            panic!("a first turn reads the whole history: {:?}", first.history);
        };
        assert_eq!(messages.len(), n);
        assert!(!first.input_saved, "without a mark the input is not saved");
        stores
            .checkpoints
            .save(&checkpoint(&ctx, "t1"))
            .await
            .unwrap();
        let produced = [
            Arc::new(Message::user("go")),
            Arc::new(Message::assistant("done")),
        ];
        commit(&*turns, &ctx, "t1", &produced).await;
        let known = HistoryMark {
            epoch: mark.epoch,
            len: n + 2,
        };

        // The second turn, counted operation by operation.
        let before = proxy.quiet().await;
        let second = begin(&*turns, &ctx, "t2", Some(&known)).await;
        let after_begin = proxy.count();
        assert!(second.input_saved, "the mark holds: the input is saved");
        assert!(
            matches!(&second.history, LoadedHistory::Tail { messages, .. } if messages.is_empty()),
            "{:?}",
            second.history
        );
        assert!(second.state.is_some(), "the state is read");
        stores
            .checkpoints
            .save(&checkpoint(&ctx, "t2"))
            .await
            .unwrap();
        let after_save = proxy.count();
        commit(&*turns, &ctx, "t2", &[Arc::new(Message::assistant("done"))]).await;
        let after_commit = proxy.count();
        let each = [
            after_begin - before,
            after_save - after_begin,
            after_commit - after_save,
        ];
        assert_eq!(each, [1, 1, 1], "start, checkpoint, end at history {n}");
        assert!(after_commit - before <= 3, "history {n}");
        assert_eq!(stores.messages.count(&ctx).await.unwrap(), n + 4);
        assert_eq!(stores.locks.lease(&ctx).await.unwrap(), None, "released");
        assert_eq!(
            stores.checkpoints.load("t2").await.unwrap(),
            None,
            "forgotten"
        );
    }
    support::drop_schema(&backend).await;
}
