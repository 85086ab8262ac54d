#!/usr/bin/env bash
# A throw-away Redis Cluster of three masters on free loopback ports, for the
# tests. Nothing is persisted; everything lives under DIR.
#
#   scripts/redis-cluster.sh start DIR   # prints the node URLs, comma-separated
#   scripts/redis-cluster.sh stop DIR    # stops the nodes and removes DIR
#
# `start` on a DIR whose cluster still runs prints its URLs again; `start`
# on a DIR left by a dead cluster cleans it and starts anew. `stop` on a DIR
# that is gone does nothing. redis-server and redis-cli come from
# `scripts/provision.sh redis`.
set -euo pipefail

NODES=3
log() { printf '[redis-cluster] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() { die "usage: $0 start|stop DIR"; }

[ $# -eq 2 ] || usage
cmd=$1
dir=$2

urls_of() {
  local urls=() port
  for port in $(cat "$dir/ports"); do urls+=("redis://127.0.0.1:$port"); done
  (IFS=,; echo "${urls[*]}")
}

alive() {
  local port
  [ -f "$dir/ports" ] || return 1
  for port in $(cat "$dir/ports"); do
    redis-cli -p "$port" ping >/dev/null 2>&1 || return 1
  done
}

stop() {
  [ -d "$dir" ] || return 0
  local pidfile pid
  for pidfile in "$dir"/node-*/redis.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    # Only a redis-server (a stale pid file may name another process by now).
    if kill -0 "$pid" 2>/dev/null && [ "$(ps -p "$pid" -o comm= 2>/dev/null)" = redis-server ]; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$dir"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
  command -v redis-server >/dev/null 2>&1 || die "redis-server not found: run scripts/provision.sh redis"
  command -v redis-cli >/dev/null 2>&1 || die "redis-cli not found: run scripts/provision.sh redis"
  if alive; then urls_of; return; fi
  stop
  mkdir -p "$dir"
  local ports=() i port node
  for i in $(seq "$NODES"); do
    # The cluster bus listens on port + 10000: both must be free.
    for _ in $(seq 20); do
      port=$(free_port)
      if [ "$port" -lt 55535 ] && ! (echo >/dev/tcp/127.0.0.1/$((port + 10000))) 2>/dev/null; then break; fi
    done
    node="$dir/node-$i"
    mkdir -p "$node"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$node" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --save '' --appendonly no --daemonize yes \
      --pidfile "$node/redis.pid" --logfile "$node/redis.log" >/dev/null \
      || { stop; die "redis-server on port $port did not start"; }
    ports+=("$port")
  done
  echo "${ports[*]}" > "$dir/ports"
  for port in "${ports[@]}"; do
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
    redis-cli -p "$port" ping >/dev/null 2>&1 || { stop; die "node on port $port does not answer"; }
  done
  local hosts=()
  for port in "${ports[@]}"; do hosts+=("127.0.0.1:$port"); done
  redis-cli --cluster create "${hosts[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 \
    || { cat "$dir/create.log" >&2; stop; die "redis-cli --cluster create failed"; }
  for port in "${ports[@]}"; do
    for _ in $(seq 200); do
      redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && break
      sleep 0.05
    done
    redis-cli -p "$port" cluster info | grep -q '^cluster_state:ok' \
      || { stop; die "node on port $port: cluster_state is not ok"; }
  done
  log "up: ${hosts[*]}"
  urls_of
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
