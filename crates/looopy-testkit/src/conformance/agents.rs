//! [`AgentStateStore`] rules.

use std::sync::Arc;

use looopy_core::store::{AgentState, AgentStateStore, LifecycleState};

use super::fixtures::{LIFECYCLES, at, full_agent_state};
use super::{UniqueIds, ok};

/// Checks an [`AgentStateStore`]: round trips of every field and lifecycle
/// state, replacement (by `save` and `save_shared`), delete, and `list_by_owner` (order, limit, owner
/// changes, deletes).
pub async fn agent_state_store(store: Arc<dyn AgentStateStore>, ids: &UniqueIds) {
    let store = &*store;
    let owner = ids.next("owner");
    let other_owner = ids.next("owner");

    // Missing.
    let missing = ids.next("ctx");
    assert_eq!(
        ok(store.load(&missing).await, "load of a missing context"),
        None
    );
    ok(store.delete(&missing).await, "delete of a missing context");
    assert!(
        ok(
            store.list_by_owner(&owner, 10).await,
            "list of an unknown owner"
        )
        .is_empty()
    );

    // Every lifecycle state round-trips (under an owner of its own).
    let lifecycle_owner = ids.next("owner");
    for lifecycle in LIFECYCLES {
        let ctx = ids.next("ctx");
        let state = full_agent_state(&ctx, Some(&lifecycle_owner), lifecycle, at(1));
        ok(store.save(&state).await, "save");
        assert_eq!(
            ok(store.load(&ctx).await, "load"),
            Some(state),
            "agent state in lifecycle {lifecycle:?} must round-trip field by field"
        );
        ok(store.delete(&ctx).await, "cleanup delete");
    }
    // Without owner or metadata too.
    let bare_ctx = ids.next("ctx");
    let mut bare = full_agent_state(&bare_ctx, None, LifecycleState::Ready, at(2));
    bare.metadata.clear();
    ok(store.save(&bare).await, "save without owner");
    assert_eq!(ok(store.load(&bare_ctx).await, "load"), Some(bare.clone()));

    // list_by_owner: most recently active first, limited.
    let activity = [10, 50, 30, 40, 20];
    let mut states: Vec<AgentState> = Vec::new();
    for seconds in activity {
        let ctx = ids.next("ctx");
        let state = full_agent_state(&ctx, Some(&owner), LifecycleState::Ready, at(seconds));
        ok(store.save(&state).await, "save");
        states.push(state);
    }
    let elsewhere_ctx = ids.next("ctx");
    let elsewhere = full_agent_state(
        &elsewhere_ctx,
        Some(&other_owner),
        LifecycleState::Paused,
        at(100),
    );
    ok(store.save(&elsewhere).await, "save for another owner");
    let (s10, s50, s30, s40, s20) = (
        states[0].clone(),
        states[1].clone(),
        states[2].clone(),
        states[3].clone(),
        states[4].clone(),
    );

    let list = |owner: String, limit: usize| async move {
        ok(store.list_by_owner(&owner, limit).await, "list_by_owner")
    };
    assert_eq!(
        list(owner.clone(), 10).await,
        vec![
            s50.clone(),
            s40.clone(),
            s30.clone(),
            s20.clone(),
            s10.clone()
        ],
        "list_by_owner must return only that owner's contexts, most recently active first"
    );
    assert_eq!(
        list(owner.clone(), 2).await,
        vec![s50.clone(), s40.clone()],
        "list_by_owner must honour its limit, keeping the most recent"
    );

    // Saving again replaces, and moves the context in the order.
    let mut s10_later = s10.clone();
    s10_later.last_activity = at(60);
    s10_later.turn_count += 1;
    s10_later.lifecycle = LifecycleState::Busy;
    ok(store.save(&s10_later).await, "save replacing");
    assert_eq!(
        ok(store.load(&s10.context_id).await, "load"),
        Some(s10_later.clone())
    );
    assert_eq!(
        list(owner.clone(), 1).await,
        vec![s10_later.clone()],
        "a newer last_activity must move the context to the front"
    );

    // A shared state (`save_shared`) replaces it as `save` does.
    s10_later.turn_count += 1;
    s10_later
        .metadata
        .insert("shared".into(), serde_json::json!(true));
    ok(
        store.save_shared(&Arc::new(s10_later.clone())).await,
        "save_shared replacing",
    );
    assert_eq!(
        ok(store.load(&s10.context_id).await, "load after save_shared"),
        Some(s10_later.clone()),
        "save_shared must replace the state as save does"
    );
    assert_eq!(
        list(owner.clone(), 1).await,
        vec![s10_later.clone()],
        "a state saved shared must be listed as saved"
    );

    // A context that changes owner leaves the old owner's list (the change
    // saved shared: a store must move it in its owner index too).
    let mut moved = s50.clone();
    moved.owner = Some(other_owner.clone());
    ok(
        store.save_shared(&Arc::new(moved.clone())).await,
        "save_shared with another owner",
    );
    let mut unowned = s40.clone();
    unowned.owner = None;
    ok(store.save(&unowned).await, "save without owner");
    // And a deleted one leaves it too.
    ok(store.delete(&s30.context_id).await, "delete");
    assert_eq!(
        ok(store.load(&s30.context_id).await, "load after delete"),
        None
    );

    assert_eq!(
        list(owner.clone(), 10).await,
        vec![s10_later.clone(), s20.clone()],
        "list_by_owner must follow owner changes and deletes"
    );
    assert_eq!(
        list(other_owner.clone(), 10).await,
        vec![elsewhere.clone(), moved.clone()],
        "a context saved with a new owner must be listed under it"
    );

    for ctx in [
        &s10.context_id,
        &s20.context_id,
        &s40.context_id,
        &s50.context_id,
        &elsewhere_ctx,
        &bare_ctx,
    ] {
        ok(store.delete(ctx).await, "cleanup delete");
    }
    assert!(
        list(owner, 10).await.is_empty(),
        "deleted contexts must not be listed"
    );
}
