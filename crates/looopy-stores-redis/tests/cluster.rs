//! The Redis stores on a real Redis Cluster of three masters: the store
//! conformance suite passes, and the keys of different contexts and tasks
//! are spread over the masters (so the cluster, not one node, answered).
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use looopy_core::store::Stores;
use looopy_core::{AgentEvent, EventPayload, Message};
use looopy_stores_redis::{RedisBackend, RedisConfig};
use looopy_testkit::checkpoints;
use looopy_testkit::conformance::{self, UniqueIds};

use support::cluster::{ClusterConfig, TestCluster, cluster};

/// A pool on the cluster, checked to be a cluster pool.
async fn backend(cluster: &TestCluster) -> RedisBackend {
    let backend = support::backend(cluster.config()).await;
    assert!(backend.is_cluster());
    backend
}

async fn stores(cluster: &TestCluster) -> Stores {
    looopy_stores_redis::stores(backend(cluster).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_stores_pass_the_whole_suite() {
    let Some(cluster) = cluster() else { return };
    let stores = stores(&cluster).await;
    conformance::run_all(&stores, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_turn_store_passes_its_rules_on_a_cluster() {
    // Store by store there: its keys are on several slots.
    let Some(cluster) = cluster() else { return };
    let stores = stores(&cluster).await;
    let turns = stores.turns.expect("the Redis stores have a turn store");
    conformance::turn_store(turns, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "current_thread")]
async fn cluster_stores_pass_on_a_single_thread_with_one_connection() {
    let Some(cluster) = cluster() else { return };
    let stores = support::stores(cluster.config().with_pool_size(1)).await;
    conformance::run_all(&stores, &UniqueIds::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_task_records_are_atomic_across_two_connections() {
    let Some(cluster) = cluster() else { return };
    // Two pools under one prefix, as two server processes would have.
    let config = cluster.config();
    let a = support::stores(config.clone()).await;
    let b = support::stores(config).await;
    conformance::task_store_across_handles(
        a.task_records.clone(),
        b.task_records.clone(),
        &UniqueIds::new(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_config_with_a_list_of_cluster_urls_connects_every_store() {
    let Some(cluster) = cluster() else { return };
    let urls: Vec<String> = cluster.urls().iter().map(|u| format!("{u:?}")).collect();
    let config: RedisConfig = toml::from_str(&format!(
        "cluster_urls = [{}]\nkey_prefix = {:?}",
        urls.join(", "),
        cluster.config().key_prefix
    ))
    .unwrap();
    let stores: Stores = looopy_stores_redis::connect(config).await.unwrap();
    conformance::run_all(&stores, &UniqueIds::new()).await;
}

/// A plain (non-cluster) connection to each master, by address.
async fn masters(cluster: &TestCluster) -> BTreeMap<String, redis::aio::MultiplexedConnection> {
    let mut out = BTreeMap::new();
    for addr in support::cluster::master_addrs(cluster).await {
        let client = redis::Client::open(format!("redis://{addr}")).unwrap();
        out.insert(
            addr,
            client.get_multiplexed_async_connection().await.unwrap(),
        );
    }
    out
}

/// The keys under `prefix` that each master holds itself.
async fn keys_by_master(
    masters: &mut BTreeMap<String, redis::aio::MultiplexedConnection>,
    prefix: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for (addr, conn) in masters.iter_mut() {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}:*"))
            .query_async(conn)
            .await
            .unwrap();
        out.insert(addr.clone(), keys.into_iter().collect());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_of_different_contexts_live_on_different_masters() {
    let Some(cluster) = cluster() else { return };
    let backend = backend(&cluster).await;
    let stores = looopy_stores_redis::stores(backend.clone());
    let prefix = backend.keys().prefix().to_owned();
    let mut masters = masters(&cluster).await;
    assert_eq!(masters.len(), 3, "three masters: {:?}", masters.keys());

    // Enough contexts that each master gets some (16384 slots, 3 ranges).
    let contexts: Vec<String> = (0..24).map(|i| format!("ctx-{i}")).collect();
    for (i, ctx) in contexts.iter().enumerate() {
        stores
            .messages
            .append(ctx, &[Message::user(format!("hello {i}"))])
            .await
            .unwrap();
        let state = checkpoints::ready_state(ctx, Some("owner-1"));
        stores.agents.save(&state).await.unwrap();
        let task = format!("task-{i}");
        stores
            .events
            .append(
                &task,
                Arc::new(AgentEvent::new(
                    task.as_str().into(),
                    ctx.as_str().into(),
                    EventPayload::Text { text: "x".into() },
                )),
            )
            .await
            .unwrap();
    }

    let held = keys_by_master(&mut masters, &prefix).await;
    let mut conn = masters.values().next().unwrap().clone();
    let mut used = BTreeSet::new();
    for ctx in &contexts {
        let messages = backend.keys().messages(ctx);
        let agent = backend.keys().agent(ctx);
        let holders: Vec<&String> = held
            .iter()
            .filter(|(_, keys)| keys.contains(&messages))
            .map(|(addr, _)| addr)
            .collect();
        assert_eq!(holders.len(), 1, "{messages} is on exactly one master");
        assert!(
            held[holders[0]].contains(&agent),
            "every key of a context is on its master"
        );
        // The master that holds it serves the key's slot.
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&messages)
            .query_async(&mut conn)
            .await
            .unwrap();
        let slot_of_agent: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&agent)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(slot, slot_of_agent, "one hash tag, one slot");
        used.insert(holders[0].clone());
    }
    assert_eq!(
        used.len(),
        3,
        "24 contexts land on every master, not on one node"
    );
    // The owner index lives on one master, apart from some of the contexts
    // it lists; listing it still finds them all.
    let listed = stores.agents.list_by_owner("owner-1", 100).await.unwrap();
    assert_eq!(listed.len(), contexts.len());
    for (i, ctx) in contexts.iter().enumerate() {
        assert_eq!(stores.messages.count(ctx).await.unwrap(), 1);
        let events = stores
            .events
            .read(&format!("task-{i}"), None, 10)
            .await
            .unwrap();
        assert_eq!(events.len(), 1);
    }
    support::cluster::cleanup(&cluster, &prefix).await;
}
