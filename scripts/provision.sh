#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine. Idempotent: a second
# run finds everything in place and does nothing. Usage:
#   scripts/provision.sh [redis] [postgres] [python] [node] [chromium]   (default: all)
# Everything but apt packages lands under .tools/ in the repository (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools"
mkdir -p "$TOOLS"

# Pinned versions of the third-party servers and clients the tests talk to.
PY_PACKAGES=("mcp==2.3.0" "a2a-sdk[http-server]==1.3.0" "httpx" "httpx-sse" "moto[server]==5.2.5")
PY03_PACKAGES=("a2a-sdk==0.3.26" "httpx" "httpx-sse")
# The JUnit XML schema check of `looopy eval`'s tests, in a venv of its own.
PY_XML_PACKAGES=("xmlschema==3.4.3")
NODE_PACKAGES=("@copilotkit/aimock@1.43.0" "@modelcontextprotocol/server-everything@2026.8.31" "@modelcontextprotocol/inspector@2.12.0")
CHROMIUM_NODE_PACKAGES=("playwright-core@1.65.1" "axe-core@4.14.1")

log() { printf '[provision] %s\n' "$*" >&2; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    apt_updated=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# redis-server for the tests' own servers, redis-cli (Debian's redis-tools,
# a dependency of redis-server) for scripts/redis-cluster.sh.
provision_redis() {
  if ! command -v redis-server >/dev/null 2>&1; then
    apt_install redis-server
    # The package may start a system service; the tests start their own servers.
    (service redis-server stop >/dev/null 2>&1 || true)
  fi
  command -v redis-cli >/dev/null 2>&1 || apt_install redis-tools
}

# PostgreSQL's server programs (initdb, pg_ctl, postgres under
# /usr/lib/postgresql/<version>/bin) and the `postgres` user the package
# creates: the tests make and start throw-away clusters of their own as that
# user (crates/looopy-testkit/src/postgres_server.rs).
provision_postgres() {
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt_install postgresql
    # The package may start a system cluster; the tests start their own.
    (service postgresql stop >/dev/null 2>&1 || true)
  fi
}

venv_with() {
  local dir=$1; shift
  local stamp="$dir/.provisioned-$(printf '%s ' "$@" | sha1sum | cut -c1-12)"
  [ -f "$stamp" ] && return
  log "python venv $dir: $*"
  python3 -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check "$@"
  touch "$stamp"
}

provision_python() {
  venv_with "$TOOLS/venv" "${PY_PACKAGES[@]}"
  venv_with "$TOOLS/venv-a2a03" "${PY03_PACKAGES[@]}"
  venv_with "$TOOLS/venv-xml" "${PY_XML_PACKAGES[@]}"
}

node_with() {
  local dir=$1; shift
  local stamp="$dir/.provisioned-$(printf '%s ' "$@" | sha1sum | cut -c1-12)"
  [ -f "$stamp" ] && return
  log "npm install into $dir: $*"
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"looopy-test-tools","private":true}' > "$dir/package.json"
  (cd "$dir" && npm install --silent --no-audit --no-fund "$@" >/dev/null 2>&1)
  touch "$stamp"
}

provision_node() {
  node_with "$TOOLS/node" "${NODE_PACKAGES[@]}"
}

# Headless Chromium, playwright-core and axe-core for the browser tests
# (crates/looopy-a2a/tests/web_ui.rs drives /usr/bin/chromium through
# playwright-core on the chat page, crates/looopy-cli/tests/eval_report.rs on
# `looopy eval`'s HTML report; axe-core checks both for WCAG 2.1 A/AA).
provision_chromium() {
  command -v chromium >/dev/null 2>&1 || apt_install chromium chromium-driver
  node_with "$TOOLS/node" "${NODE_PACKAGES[@]}" "${CHROMIUM_NODE_PACKAGES[@]}"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(redis postgres python node chromium)
for t in "${targets[@]}"; do
  case "$t" in
    redis) provision_redis ;;
    postgres) provision_postgres ;;
    python) provision_python ;;
    node) provision_node ;;
    chromium) provision_chromium ;;
    *) echo "unknown target: $t" >&2; exit 2 ;;
  esac
done
log "done: ${targets[*]}"
