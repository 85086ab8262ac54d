//! The execution records of a task that runs two turns (a second message
//! sent to the same task): each turn keeps its record, `Agent::record`
//! returns the latest and `Agent::task_records` both, oldest first, on the
//! memory and the Redis stores.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::TurnOptions;
use looopy_core::store::Stores;
use looopy_core::{LlmResponse, TaskState};
use looopy_testkit::ScriptedLlm;
use support::{builder, start_turn};

async fn two_turns_of_one_task_keep_a_record_each(stores: &Stores, ctx: &str) {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("Which city?"))
        .respond(LlmResponse::text("Sunny in Paris."));
    let agent = builder(ctx, &llm, stores)
        .record_store(stores.records.clone().expect("the stores keep records"))
        .build()
        .unwrap();
    let first = start_turn(&agent, "What is the weather?", TurnOptions::new())
        .await
        .finish()
        .await
        .unwrap();
    assert_eq!(first.state, TaskState::Completed);
    let task = first.task_id.clone();
    let second = start_turn(&agent, "Paris", TurnOptions::new().with_task_id(&task))
        .await
        .finish()
        .await
        .unwrap();
    assert_eq!(second.task_id, task);

    let records = agent.task_records(&task).await.unwrap();
    let turns: Vec<Option<u64>> = records.iter().map(|r| r.turn_number).collect();
    assert_eq!(turns, [Some(1), Some(2)], "both turns, oldest first");
    assert!(records.iter().all(|r| r.task_id == task));
    let answers: Vec<String> = records
        .iter()
        .map(|r| {
            r.model_calls()
                .filter_map(|c| c.response.as_ref())
                .map(|resp| resp.text.summary(80))
                .collect::<String>()
        })
        .collect();
    assert_eq!(answers, ["Which city?", "Sunny in Paris."]);
    let latest = agent.record(&task).await.unwrap().unwrap();
    assert_eq!(latest, records[1], "record is the latest turn's");
    assert_eq!(agent.records(10).await.unwrap().len(), 2);

    // Another conversation's agent on the same stores sees none of them.
    let other = builder(&format!("{ctx}-other"), &llm, stores)
        .record_store(stores.records.clone().unwrap())
        .build()
        .unwrap();
    assert!(other.task_records(&task).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_of_one_task_are_recorded_in_memory() {
    let stores = looopy_stores_memory::stores();
    two_turns_of_one_task_keep_a_record_each(&stores, "c-task-records").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_of_one_task_are_recorded_in_redis() {
    let prefix = format!("taskrec-{}", uuid::Uuid::new_v4().simple());
    let stores = support::redis_stores(&prefix).await;
    two_turns_of_one_task_keep_a_record_each(&stores, "c-task-records").await;
}
