//! A turn survives the loss of its process: three real `looopy serve`
//! replicas on one Redis, conversations spread over them, one replica
//! SIGKILLed while its tools run. The survivors (and the restarted replica)
//! find the stranded turns and finish them: no completed tool call runs
//! again, an interrupted one is not retried, resubscribed streams reach the
//! final event in order, and a recovered turn can be cancelled from any
//! replica. On one Redis, on a 3-master Redis Cluster and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use futures::StreamExt;
use looopy_a2a::{A2aClient, SendRequest, SendResponse, StreamEvent};
use looopy_core::TaskState;
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::redis_cluster::{TestCluster, test_redis_cluster};
use looopy_testkit::{FixtureReply, OpenAiFixture, SseReply, TestPostgres, TestRedis};
use serde_json::{Value, json};
use support::{Journal, serve, write_config};

/// Jobs per replica.
const JOBS_PER_REPLICA: usize = 3;
/// How long `slow_step` takes: the kill lands while it runs.
const SLOW_SECS: &str = "4";

/// The model: for a new job, a quick call and a slow call; once their
/// results are in, an answer naming the job (slow to come for `cancel-*`
/// jobs, so that they can be cancelled after recovery).
fn model(body: &Value) -> FixtureReply {
    let (job, results) = support::last_user_turn(body);
    if results.is_empty() {
        let args = json!({ "job": job }).to_string();
        let (quick, slow) = (format!("q-{job}"), format!("s-{job}"));
        if body["stream"] == true {
            return FixtureReply::Sse(SseReply::new(vec![
                openai::tool_call_start_chunk(0, &quick, "quick_note"),
                openai::tool_args_chunk(0, &args),
                openai::tool_call_start_chunk(1, &slow, "slow_step"),
                openai::tool_args_chunk(1, &args),
                openai::finish_chunk("tool_calls"),
            ]));
        }
        return FixtureReply::json(openai::tool_calls_completion(&[
            (&quick, "quick_note", &args),
            (&slow, "slow_step", &args),
        ]));
    }
    let interrupted = results.iter().any(|r| r.contains("interrupted"));
    let answer = FixtureReply::Text(format!(
        "finished {job} with {} results{}",
        results.len(),
        if interrupted { ", one interrupted" } else { "" }
    ));
    if job.starts_with("cancel") {
        answer.after(Duration::from_secs(120))
    } else {
        answer
    }
}

/// Three replicas' shared set-up.
struct Fleet {
    _dir: tempfile::TempDir,
    config: PathBuf,
    journal: Journal,
    llm: OpenAiFixture,
    _store: Backend,
}

/// Where the replicas keep their state.
enum Backend {
    Single(TestRedis),
    Cluster(TestCluster),
    Postgres(TestPostgres),
}

impl Backend {
    /// The `[store]` section that reaches it, under a prefix (a schema on
    /// PostgreSQL) no other test uses.
    fn store_section(&self) -> String {
        let unique = uuid::Uuid::new_v4().simple();
        match self {
            Backend::Single(r) => format!(
                "backend = \"redis\"\nurl = \"{}\"\nkey_prefix = \"recovery-{unique}\"",
                r.url()
            ),
            Backend::Cluster(c) => format!(
                "backend = \"redis\"\ncluster_urls = {:?}\nkey_prefix = \"recovery-{unique}\"",
                c.urls()
            ),
            Backend::Postgres(p) => format!(
                "backend = \"postgres\"\nurl = \"{}\"\nschema = \"r_{unique}\"\npool_size = 4",
                p.url()
            ),
        }
    }
}

impl Fleet {
    async fn new(python: &Path, store: Backend) -> Fleet {
        let llm = support::model_answering(model).await;
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::create(dir.path());
        let slow = format!("SLOW_SECS = \"{SLOW_SECS}\"");
        let tools = support::durable_tools_section(python, &journal, &slow);
        let config = write_config(
            &dir,
            &format!(
                r#"
[agent]
name = "durable"
[llm]
base_url = "{base}"
model = "m"
{tools}
[store]
{store}
[durability]
lease_ttl_secs = 1.5
scan_interval_secs = 0.3
"#,
                base = llm.base_url(),
                store = store.store_section(),
            ),
        );
        Fleet {
            _dir: dir,
            config,
            journal,
            llm,
            _store: store,
        }
    }

    fn start(&self) -> (Child, String) {
        serve(&self.config, &[])
    }

    fn journal(&self) -> Vec<String> {
        self.journal.lines()
    }

    fn count(&self, line: &str) -> usize {
        self.journal().iter().filter(|l| *l == line).count()
    }

    /// Waits until `done` holds for the journal.
    async fn wait_journal(&self, what: &str, done: impl Fn(&[String]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done(&self.journal()) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {:?}",
                self.journal()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Starts `job` on `url` without waiting; returns its task id.
async fn start_job(url: &str, job: &str) -> String {
    let client = A2aClient::new(url);
    match client
        .send(&SendRequest::text(job).non_blocking())
        .await
        .unwrap()
    {
        SendResponse::Task(t) => t.id,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Polls GetTask on `url` until the task's turn ended.
async fn wait_end(url: &str, task_id: &str) -> looopy_a2a::TaskSnapshot {
    let client = A2aClient::new(url);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let task = client.get_task(task_id, None).await.unwrap();
        if task.status.state.ends_turn() {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "task {task_id} still {:?} after 60 s",
            task.status.state
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Resubscribes to a task on `url` and reads to the final event: returns
/// the event ids and the final state.
async fn follow(url: &str, task_id: &str) -> (Vec<String>, TaskState) {
    follow_after(url, task_id, None).await
}

/// [`follow`] from after `last_event_id`.
async fn follow_after(
    url: &str,
    task_id: &str,
    last_event_id: Option<&str>,
) -> (Vec<String>, TaskState) {
    let client = A2aClient::new(url);
    let mut stream = client.resubscribe(task_id, last_event_id).await.unwrap();
    let mut ids = Vec::new();
    // A 1.0 stream begins with the task as it is (no id), then the events
    // (with ids) up to the final one; the server closes it after that.
    let read = async {
        let mut state = None;
        while let Some(item) = stream.next().await {
            let item = item.unwrap();
            if let Some(id) = item.id {
                ids.push(id);
            }
            match item.event {
                StreamEvent::Update(e) if e.is_final() => {
                    if let looopy_core::EventPayload::StatusUpdate { status, .. } = &*e.payload {
                        return status.state;
                    }
                }
                StreamEvent::Task(t) => state = Some(t.status.state),
                _ => {}
            }
        }
        state.unwrap_or_else(|| panic!("the stream of {task_id} ended without a final event"))
    };
    let state = tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("final event within 60 s");
    (ids, state)
}

/// Event ids of a Redis stream (`ms-seq`) or of a PostgreSQL log (a
/// number), compared as numbers.
fn key(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap(), seq.parse().unwrap())
}

fn assert_in_order(ids: &[String]) {
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate event ids: {ids:?}");
    assert!(
        ids.windows(2).all(|w| key(&w[0]) < key(&w[1])),
        "event ids out of order: {ids:?}"
    );
}

fn single_redis() -> Backend {
    Backend::Single(looopy_testkit::test_redis().unwrap())
}

/// Kills replica 0 mid-tool. With `restart`, starts it again at once.
async fn kill_one_replica(store: Backend, restart: bool) {
    let Some(python) = support::python() else {
        return;
    };
    let fleet = Fleet::new(&python, store).await;
    let mut replicas: Vec<(Child, String)> = (0..3).map(|_| fleet.start()).collect();
    let urls: Vec<String> = replicas.iter().map(|(_, u)| u.clone()).collect();

    let mut jobs = Vec::new();
    for (r, url) in urls.iter().enumerate() {
        for j in 0..JOBS_PER_REPLICA {
            let job = format!("job-{r}-{j}");
            jobs.push((r, job.clone(), start_job(url, &job).await));
        }
    }
    // Every quick call done and every slow call under way: then the kill.
    fleet
        .wait_journal("every job's quick note and slow start", |lines| {
            jobs.iter().all(|(_, job, _)| {
                lines.contains(&format!("quick q-{job}"))
                    && lines.contains(&format!("start s-{job}"))
            })
        })
        .await;
    replicas[0].0.kill().unwrap();
    replicas[0].0.wait().unwrap();
    let mut urls = urls;
    if restart {
        replicas[0] = fleet.start();
        urls[0] = replicas[0].1.clone();
    }
    let survivor = urls[1].clone();

    // A client resubscribes on a survivor to each killed turn while it is
    // stranded: the stream goes on to the final event, in order.
    let killed: Vec<&(usize, String, String)> = jobs.iter().filter(|(r, _, _)| *r == 0).collect();
    let followers: Vec<_> = killed
        .iter()
        .map(|(_, _, task_id)| {
            let (url, task_id) = (survivor.clone(), task_id.clone());
            tokio::spawn(async move { follow(&url, &task_id).await })
        })
        .collect();

    for (r, job, task_id) in &jobs {
        let url = &urls[1 + r % 2];
        let task = wait_end(url, task_id).await;
        assert_eq!(task.status.state, TaskState::Completed, "{job}: {task:?}");
        let answer = task
            .status
            .message
            .as_ref()
            .map(|m| m.text())
            .unwrap_or_default();
        assert!(
            answer.contains(&format!("finished {job} with 2 results")),
            "{job}: {answer}"
        );
        // The killed replica's slow calls were interrupted, not retried;
        // the survivors' ran to their end.
        assert_eq!(answer.contains("interrupted"), *r == 0, "{job}: {answer}");
        // No call ever ran twice: the quick ones came from the checkpoint.
        assert_eq!(fleet.count(&format!("quick q-{job}")), 1, "{job}");
        assert_eq!(fleet.count(&format!("start s-{job}")), 1, "{job}");
        // GetTask on every live replica agrees.
        for (i, other) in urls.iter().enumerate() {
            if i == 0 && !restart {
                continue;
            }
            let seen = A2aClient::new(other).get_task(task_id, None).await.unwrap();
            assert_eq!(
                seen.status.state,
                TaskState::Completed,
                "{job} on replica {i}"
            );
        }
    }
    let mut followed = Vec::new();
    for follower in followers {
        let (ids, state) = follower.await.unwrap();
        assert_eq!(state, TaskState::Completed);
        assert!(ids.len() >= 3, "{ids:?}");
        assert_in_order(&ids);
        followed.push(ids);
    }
    // Resubscribing to a recovered task with Last-Event-ID, on another
    // replica, after its end: exactly what came after that id.
    let (_, _, task_id) = killed[0];
    let (again, state) = follow_after(&urls[2], task_id, Some(&followed[0][0])).await;
    assert_eq!(state, TaskState::Completed);
    assert_eq!(
        again,
        followed[0][1..],
        "no gap and no duplicate after Last-Event-ID"
    );

    assert_eq!(
        fleet.llm.served(),
        2 * jobs.len(),
        "one model call per step: nothing was asked twice"
    );
    for (child, _) in replicas.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_of_a_killed_replica_finish_on_the_survivors() {
    kill_one_replica(single_redis(), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_of_a_killed_replica_finish_on_a_redis_cluster() {
    let Some(cluster) = test_redis_cluster() else {
        return;
    };
    kill_one_replica(Backend::Cluster(cluster), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_of_a_killed_replica_finish_on_postgres() {
    let Some(postgres) =
        looopy_testkit::test_postgres_or_skip("turns_of_a_killed_replica_finish_on_postgres")
    else {
        return;
    };
    kill_one_replica(Backend::Postgres(postgres), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_of_a_killed_and_restarted_replica_finish() {
    kill_one_replica(single_redis(), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_turn_is_cancelled_from_another_replica() {
    let Some(python) = support::python() else {
        return;
    };
    let fleet = Fleet::new(&python, single_redis()).await;
    let mut replicas: Vec<(Child, String)> = (0..3).map(|_| fleet.start()).collect();
    let urls: Vec<String> = replicas.iter().map(|(_, u)| u.clone()).collect();
    let task_id = start_job(&urls[0], "cancel-me").await;
    fleet
        .wait_journal("the slow step", |lines| {
            lines.contains(&"start s-cancel-me".to_owned())
        })
        .await;
    replicas[0].0.kill().unwrap();
    replicas[0].0.wait().unwrap();
    // Recovered once the model is asked for the answer again, elsewhere.
    let deadline = Instant::now() + Duration::from_secs(60);
    while fleet.llm.served() < 2 {
        assert!(Instant::now() < deadline, "the turn was never recovered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Cancel through both survivors: whichever runs the turn, it ends.
    let cancelled = A2aClient::new(&urls[2])
        .cancel_task(&task_id)
        .await
        .unwrap();
    let task = if cancelled.status.state == TaskState::Canceled {
        cancelled
    } else {
        wait_end(&urls[1], &task_id).await
    };
    assert_eq!(task.status.state, TaskState::Canceled, "{task:?}");
    let again = A2aClient::new(&urls[1])
        .get_task(&task_id, None)
        .await
        .unwrap();
    assert_eq!(again.status.state, TaskState::Canceled);
    assert_eq!(fleet.count("start s-cancel-me"), 1);
    for (child, _) in replicas.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
}
