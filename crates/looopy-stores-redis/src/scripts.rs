//! The Lua scripts. Redis runs a script to completion with no other command
//! in between, so each is one atomic step. Every script checks everything it
//! needs before its first write, so a refused call writes nothing; the only
//! failure after a write would be Redis running out of memory mid-script
//! (`maxmemory` with a no-eviction policy refuses a script at its first
//! write, before anything is written).
//!
//! Scripts name every key they touch in `KEYS`, except `artifacts_list` and
//! `artifacts_clear`, which build per-artifact keys from `ARGV[1]`; those
//! keys share the context's hash tag, so they live on the same cluster slot.

use std::sync::LazyLock;

use redis::Script;

/// Helpers every script gets: `push` and `push_range` (`ARGV[from..]`, a
/// range of it, or a table onto a list in chunks, so that no call passes
/// more values than Lua's stack takes),
/// `expire`, and `index_artifact`.
const PUSH: &str = r#"
local function push_range(key, values, from, to)
  local i = from
  while i <= to do
    local j = math.min(i + 999, to)
    redis.call('RPUSH', key, unpack(values, i, j))
    i = j + 1
  end
end
local function push(key, values, from)
  push_range(key, values, from, #values)
end
local function expire(key, ms)
  if ms > 0 then redis.call('PEXPIRE', key, ms) end
end
-- Puts an artifact last in its context's index unless it is there already
-- (with its hash); returns whether it was new.
local function index_artifact(index, art, member)
  if redis.call('EXISTS', art) == 1 and redis.call('ZSCORE', index, member) ~= false then
    return false
  end
  local last = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
  local seq = 1
  if #last == 2 then seq = tonumber(last[2]) + 1 end
  redis.call('ZADD', index, seq, member)
  return true
end
"#;

fn with_helpers(body: &str) -> Script {
    Script::new(&format!("{PUSH}\n{body}"))
}

/// Replaces messages `start..end` of a list, giving the history a new
/// epoch.
///
/// KEYS: list, epoch. ARGV: new epoch, start, end, ttl_ms, replacement...
/// Returns `{1, new_len}`, or `{0, len}` when the range is out of bounds.
pub(crate) static REPLACE_RANGE: LazyLock<Script> = LazyLock::new(|| {
    with_helpers(
        r#"
local key = KEYS[1]
local s, e, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local len = redis.call('LLEN', key)
if s > e or e > len then return {0, len} end
if s == e and #ARGV < 5 then return {1, len} end
local tail = {}
if e < len then tail = redis.call('LRANGE', key, e, -1) end
if s == 0 then redis.call('DEL', key) else redis.call('LTRIM', key, 0, s - 1) end
push(key, ARGV, 5)
push(key, tail, 1)
redis.call('SET', KEYS[2], ARGV[1])
expire(key, ttl)
expire(KEYS[2], ttl)
return {1, redis.call('LLEN', key)}
"#,
    )
});

/// Saves a checkpoint: the header, and the messages either appended to
/// what is stored (when it is what the caller last saw) or written anew.
///
/// KEYS: header hash, messages list.
/// ARGV: mode (`append` | `full`), epoch, stored_len (append: what the
/// caller last saw), head JSON, new_len, ttl_ms, messages...
/// Returns 1, or 0 when an `append` found something else stored (nothing
/// written; the caller then saves in full).
pub(crate) static SAVE_CHECKPOINT: LazyLock<Script> = LazyLock::new(|| {
    with_helpers(
        r#"
local head, list = KEYS[1], KEYS[2]
local epoch, ttl = ARGV[2], tonumber(ARGV[6])
if ARGV[1] == 'append' then
  if redis.call('HGET', head, 'epoch') ~= epoch
     or redis.call('LLEN', list) ~= tonumber(ARGV[3]) then
    return 0
  end
else
  redis.call('DEL', list)
end
push(list, ARGV, 7)
redis.call('HSET', head, 'head', ARGV[4], 'epoch', epoch, 'len', ARGV[5])
expire(head, ttl)
expire(list, ttl)
return 1
"#,
    )
});

/// Creates or replaces an artifact, keeping its creation time and place.
///
/// KEYS: index zset, artifact hash, parts list.
/// ARGV: member (escaped id), meta JSON, task id, now, ttl_ms, parts...
pub(crate) static ARTIFACT_PUT: LazyLock<Script> = LazyLock::new(|| {
    with_helpers(
        r#"
local index, art, parts = KEYS[1], KEYS[2], KEYS[3]
local ttl = tonumber(ARGV[5])
if index_artifact(index, art, ARGV[1]) then
  redis.call('HSET', art, 'created', ARGV[4])
end
redis.call('HSET', art, 'meta', ARGV[2], 'task', ARGV[3], 'updated', ARGV[4])
redis.call('DEL', parts)
push(parts, ARGV, 6)
expire(index, ttl)
expire(art, ttl)
expire(parts, ttl)
return 1
"#,
    )
});

/// Appends parts to an artifact, creating it when missing.
///
/// KEYS: index zset, artifact hash, parts list.
/// ARGV: member (escaped id), meta JSON for a new artifact, task id, now,
/// ttl_ms, parts...
pub(crate) static ARTIFACT_APPEND: LazyLock<Script> = LazyLock::new(|| {
    with_helpers(
        r#"
local index, art, parts = KEYS[1], KEYS[2], KEYS[3]
local ttl = tonumber(ARGV[5])
if index_artifact(index, art, ARGV[1]) then
  redis.call('DEL', parts)
  redis.call('HSET', art, 'created', ARGV[4], 'meta', ARGV[2], 'task', ARGV[3])
end
redis.call('HSET', art, 'updated', ARGV[4])
push(parts, ARGV, 6)
expire(index, ttl)
expire(art, ttl)
expire(parts, ttl)
return 1
"#,
    )
});

/// Every artifact of a context, in creation order.
///
/// KEYS: index zset. ARGV: artifact key base.
/// Returns `{{meta, task, created, updated, {parts...}}...}`.
pub(crate) static ARTIFACTS_LIST: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local out = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local art = ARGV[1] .. member
  local h = redis.call('HMGET', art, 'meta', 'task', 'created', 'updated')
  if h[1] and h[2] and h[3] and h[4] then
    out[#out + 1] = {h[1], h[2], h[3], h[4], redis.call('LRANGE', art .. ':parts', 0, -1)}
  end
end
return out
"#,
    )
});

/// Deletes every artifact of a context.
///
/// KEYS: index zset. ARGV: artifact key base.
pub(crate) static ARTIFACTS_CLEAR: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local art = ARGV[1] .. member
  redis.call('DEL', art, art .. ':parts')
end
redis.call('DEL', KEYS[1])
return 1
"#,
    )
});

/// Writes a task record only when the stored one has the expected version
/// (read from its JSON: a missing record and one without a version are
/// version 0). The new JSON carries the new version already.
///
/// KEYS: record. ARGV: expected version, new JSON, ttl_ms.
/// Returns `{1, previous JSON or nil}` when written, `{0, stored version}`
/// when another writer came first (nothing written).
pub(crate) static TASK_RECORD_CAS: LazyLock<Script> = LazyLock::new(|| {
    with_helpers(
        r#"
local cur = redis.call('GET', KEYS[1])
local version = 0
if cur then
  local ok, decoded = pcall(cjson.decode, cur)
  if ok and type(decoded) == 'table' then version = tonumber(decoded['version']) or 0 end
end
if version ~= tonumber(ARGV[1]) then return {0, version} end
redis.call('SET', KEYS[1], ARGV[2])
expire(KEYS[1], tonumber(ARGV[3]))
return {1, cur}
"#,
    )
});

/// Rewrites entries of a task's event stream below its last one. A stream
/// takes no entry below its last id, so the stream is copied, entry by
/// entry with its id, into a key of the same slot with the removed entries
/// left out and the new ones in their places, and renamed over the old
/// one (its expiry kept).
///
/// KEYS: stream, scratch key. ARGV: the last id the caller saw, the
/// number of removed ids, the removed ids, then `id, event JSON` pairs.
/// Returns 1 when rewritten, 0 when the stream is gone or its last entry
/// is another (nothing written).
pub(crate) static EVENTS_REPLACE: LazyLock<Script> = LazyLock::new(|| {
    with_helpers(
        r#"
local key, scratch = KEYS[1], KEYS[2]
local top = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
if #top == 0 or top[1][1] ~= ARGV[1] then return 0 end
local n = tonumber(ARGV[2])
local gone = {}
for i = 3, 2 + n do gone[ARGV[i]] = true end
local put = {}
for i = 3 + n, #ARGV, 2 do put[ARGV[i]] = ARGV[i + 1] end
local ttl = redis.call('PTTL', key)
redis.call('DEL', scratch)
for _, entry in ipairs(redis.call('XRANGE', key, '-', '+')) do
  local id = entry[1]
  if put[id] then
    redis.call('XADD', scratch, id, 'e', put[id])
  elseif not gone[id] then
    redis.call('XADD', scratch, id, unpack(entry[2]))
  end
end
redis.call('RENAME', scratch, key)
expire(key, ttl)
return 1
"#,
    )
});

/// The server's clock in milliseconds, for the lease scripts: every
/// process then agrees on when a lease runs out.
const NOW: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"#;

fn lease_script(body: &str) -> Script {
    Script::new(&format!("{NOW}{body}"))
}

/// `acquire(lease, registry, owner, task, ttl_ms, member)`: takes a turn
/// lease (needs `now`). Returns `{1}` when taken (or extended by its
/// owner), `{0}` when held by another owner, `{2, task}` when stranded (the
/// lease of a turn that ran out: only a take-over frees it). A lease
/// without a task expires with its key; a turn's lease stays, listed in the
/// registry by expiry.
const ACQUIRE: &str = r#"
local function acquire(lease, registry, owner, task, ttl, member)
  local cur = redis.call('HMGET', lease, 'owner', 'task', 'exp')
  if cur[1] and cur[1] ~= owner then
    if tonumber(cur[3]) > now then return {0} end
    if cur[2] and cur[2] ~= '' then return {2, cur[2]} end
  end
  local exp = now + tonumber(ttl)
  redis.call('HSET', lease, 'owner', owner, 'task', task, 'exp', exp)
  if task ~= '' then
    redis.call('PERSIST', lease)
    redis.call('ZADD', registry, exp, member)
  else
    redis.call('PEXPIRE', lease, ttl)
    redis.call('ZREM', registry, member)
  end
  return {1}
end
"#;

/// Takes a turn lease (see `ACQUIRE`).
///
/// KEYS: lease, registry. ARGV: owner, task ('' for none), ttl_ms, member.
pub(crate) static LOCK_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    lease_script(&format!(
        "{ACQUIRE}\nreturn acquire(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])"
    ))
});

/// Extends a lease, for its owner only (a turn's owner also after it ran
/// out, as long as nobody took it over).
///
/// KEYS: lease, registry. ARGV: owner, ttl_ms, member. Returns 1 when extended.
pub(crate) static LOCK_RENEW: LazyLock<Script> = LazyLock::new(|| {
    lease_script(
        r#"
local cur = redis.call('HMGET', KEYS[1], 'owner', 'task')
if cur[1] ~= ARGV[1] then return 0 end
local exp = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'exp', exp)
if cur[2] and cur[2] ~= '' then
  redis.call('ZADD', KEYS[2], exp, ARGV[3])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
"#,
    )
});

/// Gives a lease back, for its owner only.
///
/// KEYS: lease, registry. ARGV: owner, member. Returns 1 when released.
pub(crate) static LOCK_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
"#,
    )
});

/// Hands a stranded turn lease to a new owner: only while it still belongs
/// to that task and has run out, so one of many concurrent callers wins.
///
/// KEYS: lease, registry. ARGV: task, new owner, ttl_ms, member. Returns 1
/// when taken over.
pub(crate) static LOCK_TAKE_OVER: LazyLock<Script> = LazyLock::new(|| {
    lease_script(
        r#"
local cur = redis.call('HMGET', KEYS[1], 'task', 'exp')
if cur[1] ~= ARGV[1] or ARGV[1] == '' then return 0 end
if tonumber(cur[2]) > now then return 0 end
local exp = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'exp', exp)
redis.call('ZADD', KEYS[2], exp, ARGV[4])
return 1
"#,
    )
});

/// The members of a registry shard whose lease ran out, oldest first.
///
/// KEYS: registry. ARGV: limit. Returns `member, exp` pairs.
pub(crate) static LOCK_STRANDED: LazyLock<Script> = LazyLock::new(|| {
    lease_script(
        r#"
return redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]), 'WITHSCORES')
"#,
    )
});

/// An Agent turn's start, on one server (the lease and the conversation
/// are on different cluster slots): takes the lease (when asked), reads the
/// history's epoch and length, the messages after `known_len` when the
/// epoch is `known_epoch` (else all of them), the agent state (when asked),
/// and appends the input when the stored history is exactly the known one.
/// A history without an epoch (written before epochs) gets `new_epoch`.
///
/// KEYS: lease, registry, messages, epoch, agent.
/// ARGV: 1 take lease ('1'/'0'), 2 owner, 3 task, 4 lease ttl_ms, 5 member,
/// 6 read state ('1'/'0'), 7 known epoch ('' for none), 8 known_len,
/// 9 new epoch, 10 ttl_ms, 11.. input.
/// Returns the lease refusal (`{0}` or `{2, task}`), or
/// `{1, epoch, from, len, {messages...}, {state} or {}, input saved 1/0}`.
pub(crate) static TURN_BEGIN: LazyLock<Script> = LazyLock::new(|| {
    with_helpers(&format!(
        "{NOW}{ACQUIRE}{}",
        r#"
if ARGV[1] == '1' then
  local got = acquire(KEYS[1], KEYS[2], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
  if got[1] ~= 1 then return got end
end
local ttl = tonumber(ARGV[10])
local len = redis.call('LLEN', KEYS[3])
local epoch = redis.call('GET', KEYS[4])
if not epoch then
  -- A history written before epochs: its epoch lives as long as it does.
  epoch = ARGV[9]
  redis.call('SET', KEYS[4], epoch)
  local left = redis.call('PTTL', KEYS[3])
  if left > 0 then redis.call('PEXPIRE', KEYS[4], left) else expire(KEYS[4], ttl) end
end
local state = {}
if ARGV[6] == '1' then
  local s = redis.call('GET', KEYS[5])
  if s then state = {s} end
end
local known = tonumber(ARGV[8])
local same = epoch == ARGV[7] and len >= known
local from = 0
if same then from = known end
local messages = {}
if from < len then messages = redis.call('LRANGE', KEYS[3], from, -1) end
local saved = 0
if same and len == known and #ARGV > 10 then
  push(KEYS[3], ARGV, 11)
  expire(KEYS[3], ttl)
  expire(KEYS[4], ttl)
  saved = 1
end
return {1, epoch, from, len, messages, state, saved}
"#
    ))
});

/// An Agent turn's end, on one server: writes the artifacts the turn held
/// back (as `artifact_put` / `artifact_append` would, whatever the lease:
/// the turn announced them), then checks that the lease is still the
/// caller's (else writes nothing more), appends the messages, stores the
/// agent state (indexed under its owner), releases the lease and deletes
/// the checkpoint.
///
/// KEYS: lease, registry, messages, epoch, agent, owner index, checkpoint
/// header, checkpoint messages, artifact index, then per artifact write its
/// hash and its parts list.
/// ARGV: 1 check and release the lease ('1'/'0'), 2 owner, 3 member (the
/// context id), 4 state JSON ('' for none), 5 index under the owner
/// ('1'/'0'), 6 index score, 7 delete the checkpoint ('1'/'0'), 8 ttl_ms,
/// 9 new epoch (for a history created here), 10 number of artifact writes,
/// 11 their task id, 12 now; per artifact write: kind ('put'/'append'),
/// member (escaped id), meta JSON, number of parts, the parts; then the
/// messages.
/// Returns 1, or 0 when the lease is held by another owner.
pub(crate) static TURN_COMMIT: LazyLock<Script> = LazyLock::new(|| {
    with_helpers(
        r#"
local ttl = tonumber(ARGV[8])
local at = 13
for w = 1, tonumber(ARGV[10]) do
  local kind, member, meta, n = ARGV[at], ARGV[at + 1], ARGV[at + 2], tonumber(ARGV[at + 3])
  local art, parts = KEYS[8 + 2 * w], KEYS[9 + 2 * w]
  local new = index_artifact(KEYS[9], art, member)
  if kind == 'put' then
    if new then redis.call('HSET', art, 'created', ARGV[12]) end
    redis.call('HSET', art, 'meta', meta, 'task', ARGV[11], 'updated', ARGV[12])
    redis.call('DEL', parts)
  else
    if new then
      redis.call('DEL', parts)
      redis.call('HSET', art, 'created', ARGV[12], 'meta', meta, 'task', ARGV[11])
    end
    redis.call('HSET', art, 'updated', ARGV[12])
  end
  if n > 0 then push_range(parts, ARGV, at + 4, at + 3 + n) end
  expire(KEYS[9], ttl)
  expire(art, ttl)
  expire(parts, ttl)
  at = at + 4 + n
end
if ARGV[1] == '1' and redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return 0 end
if #ARGV >= at then
  push(KEYS[3], ARGV, at)
  redis.call('SET', KEYS[4], ARGV[9], 'NX')
  expire(KEYS[3], ttl)
  expire(KEYS[4], ttl)
end
if ARGV[4] ~= '' then
  if ARGV[5] == '1' then
    redis.call('ZADD', KEYS[6], ARGV[6], ARGV[3])
    expire(KEYS[6], ttl)
  end
  redis.call('SET', KEYS[5], ARGV[4])
  expire(KEYS[5], ttl)
end
if ARGV[1] == '1' then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[3])
end
if ARGV[7] == '1' then redis.call('DEL', KEYS[7], KEYS[8]) end
return 1
"#,
    )
});
