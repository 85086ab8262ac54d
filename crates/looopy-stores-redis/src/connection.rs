//! [`Connection`]: one Redis server or a Redis Cluster, behind one
//! `ConnectionLike`, so that the stores send the same commands, pipelines
//! and scripts in both modes.
//!
//! On a cluster, a command or a script goes to the node that serves the slot
//! of its (first) key, and every key of one script shares a hash tag (see
//! [`KeyLayout`](crate::KeyLayout)), so scripts run as they do on one
//! server. A transaction (`MULTI`/`EXEC` pipeline) must keep to one slot;
//! the stores' transactions do. A plain pipeline may not span slots on a
//! cluster connection, but some of the stores' do (an index entry on the
//! owner's slot and a value on the context's): such a pipeline is cut into
//! runs of consecutive commands on one slot, sent one after another in
//! order (so an index entry is still written before its value), or all at
//! once when every command only reads. The replies are joined in the
//! pipeline's order, so the caller sees one pipeline's reply either way (a
//! plain pipeline is not atomic on one server either).

use std::time::Duration;

use futures::future::try_join_all;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::Slot;
use redis::{Arg, Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

/// A connection to one server, or to a cluster (with the limit on waiting
/// for a reply: the pooled cluster connections have no timeout of their own).
#[derive(Clone)]
pub(crate) enum Connection {
    /// One server.
    Single(MultiplexedConnection),
    /// A cluster.
    Cluster(ClusterConnection, Duration),
}

/// Commands that only read (a pipeline of nothing else may run its parts at
/// once).
const READS: &[&[u8]] = &[
    b"GET",
    b"MGET",
    b"HGET",
    b"HMGET",
    b"HGETALL",
    b"LRANGE",
    b"LLEN",
    b"ZRANGE",
    b"ZSCORE",
    b"ZCARD",
    b"XRANGE",
    b"XREVRANGE",
    b"XLEN",
    b"EXISTS",
    b"TTL",
    b"PTTL",
    b"STRLEN",
];

fn is_read(cmd: &Cmd) -> bool {
    match cmd.args_iter().next() {
        Some(Arg::Simple(name)) => READS.iter().any(|r| name.eq_ignore_ascii_case(r)),
        _ => false,
    }
}

/// Commands without keys (they may go to any node).
const KEYLESS: &[&[u8]] = &[b"PING", b"ECHO", b"TIME", b"INFO", b"SCRIPT"];

/// The slot of a command's key; `None` for commands without keys. The key
/// is the first argument, except for scripts (`EVAL`/`EVALSHA`, after the
/// key count).
fn slot(cmd: &Cmd) -> Option<Slot> {
    let mut args = cmd.args_iter().filter_map(|a| match a {
        Arg::Simple(bytes) => Some(bytes),
        _ => None,
    });
    let name = args.next()?;
    if KEYLESS.iter().any(|k| name.eq_ignore_ascii_case(k)) {
        return None;
    }
    let key = if name.eq_ignore_ascii_case(b"EVAL") || name.eq_ignore_ascii_case(b"EVALSHA") {
        let _script = args.next()?;
        let count = args.next()?;
        if count == b"0" {
            return None;
        }
        args.next()?
    } else {
        args.next()?
    };
    Some(Slot::for_key(key))
}

/// The pipeline's commands in runs of consecutive commands on one slot.
fn runs(pipeline: &Pipeline) -> Vec<Pipeline> {
    let mut out: Vec<(Option<Slot>, Pipeline)> = Vec::new();
    for cmd in pipeline.cmd_iter() {
        let here = slot(cmd);
        match out.last_mut() {
            Some((last, run)) if here.is_none() || *last == here || last.is_none() => {
                if last.is_none() {
                    *last = here;
                }
                run.add_command(cmd.clone());
            }
            _ => {
                let mut run = redis::pipe();
                run.add_command(cmd.clone());
                out.push((here, run));
            }
        }
    }
    out.into_iter().map(|(_, run)| run).collect()
}

fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "no reply from the Redis cluster in time",
    ))
}

async fn within<T>(limit: Duration, fut: impl Future<Output = RedisResult<T>>) -> RedisResult<T> {
    tokio::time::timeout(limit, fut)
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

/// Sends a plain pipeline that may span slots (see the module docs); the
/// values of every command, in order.
async fn split(conn: &ClusterConnection, pipeline: &Pipeline) -> RedisResult<Vec<Value>> {
    let runs = runs(pipeline);
    if runs.len() <= 1 {
        return conn
            .clone()
            .req_packed_commands(pipeline, 0, pipeline.len())
            .await;
    }
    let send = |run: &Pipeline| {
        let mut conn = conn.clone();
        let run = run.clone();
        async move { conn.req_packed_commands(&run, 0, run.len()).await }
    };
    let replies = if pipeline.cmd_iter().all(is_read) {
        try_join_all(runs.iter().map(send)).await?
    } else {
        let mut replies = Vec::with_capacity(runs.len());
        for run in &runs {
            replies.push(send(run).await?);
        }
        replies
    };
    Ok(replies.into_iter().flatten().collect())
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(conn) => conn.req_packed_command(cmd),
            Connection::Cluster(conn, limit) => {
                let limit = *limit;
                Box::pin(within(limit, conn.req_packed_command(cmd)))
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(conn, limit) => {
                let limit = *limit;
                if pipeline.is_transaction() {
                    // One slot (the stores' transactions keep to one hash tag).
                    Box::pin(within(
                        limit,
                        conn.req_packed_commands(pipeline, offset, count),
                    ))
                } else {
                    // Plain pipelines are sent whole, offset 0 (`Pipeline::query_async`).
                    Box::pin(within(limit, split(conn, pipeline)))
                }
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(conn) => conn.get_db(),
            Connection::Cluster(conn, _) => conn.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe_of(cmds: &[(&str, &str)]) -> Pipeline {
        let mut pipe = redis::pipe();
        for (name, key) in cmds {
            pipe.cmd(name).arg(*key).ignore();
        }
        pipe
    }

    #[test]
    fn a_pipeline_is_cut_where_the_slot_changes() {
        let pipe = pipe_of(&[
            ("ZADD", "p:{owner:o}:agents"),
            ("PEXPIRE", "p:{owner:o}:agents"),
            ("SET", "p:{ctx:c}:agent"),
            ("ZREM", "p:{owner:o}:agents"),
        ]);
        let lens: Vec<usize> = runs(&pipe).iter().map(Pipeline::len).collect();
        assert_eq!(lens, [2, 1, 1]);
        let one = pipe_of(&[("GET", "p:{ctx:c}:a"), ("LRANGE", "p:{ctx:c}:b")]);
        assert_eq!(
            runs(&one).iter().map(Pipeline::len).collect::<Vec<_>>(),
            [2]
        );
        let keyless = pipe_of(&[("PING", "x"), ("GET", "p:{ctx:c}:a")]);
        assert_eq!(runs(&keyless).len(), 1);
        let mixed = pipe_of(&[("SET", "p:{ctx:c}:a"), ("GET", "p:{ctx:c}:b")]);
        assert_eq!(
            runs(&mixed).len(),
            1,
            "reads and writes of one slot go together"
        );
        assert!(runs(&redis::pipe()).is_empty());
    }

    #[test]
    fn scripts_are_routed_by_their_first_key() {
        let mut eval = redis::cmd("EVALSHA");
        eval.arg("abc")
            .arg(2)
            .arg("p:{task:t}:x")
            .arg("p:{task:t}:y");
        assert_eq!(slot(&eval), Some(Slot::for_key("{task:t}")));
        let mut none = redis::cmd("EVAL");
        none.arg("return 1").arg(0);
        assert_eq!(slot(&none), None);
        assert_eq!(
            slot(redis::cmd("GET").arg("a{b}c")),
            Some(Slot::for_key("b"))
        );
    }

    #[test]
    fn reads_are_told_from_writes() {
        assert!(is_read(redis::cmd("get").arg("k")));
        assert!(is_read(redis::cmd("HMGET").arg("k")));
        assert!(!is_read(redis::cmd("SET").arg("k")));
        assert!(!is_read(redis::cmd("XADD").arg("k")));
    }
}
