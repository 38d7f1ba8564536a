#!/usr/bin/env bash
# A short scripted tour of lockledger on a throwaway root.
# The holder of a one-shot acquire is the calling process; inside $(...) with a
# function or a pipe that is a subshell, so the tour passes --pid $$ (this script).
set -euo pipefail
bin=$(cd "$(dirname "${1:-bin/lockledger}")" && pwd)/$(basename "${1:-bin/lockledger}")
root=$(mktemp -d "${TMPDIR:-/tmp}/lockledger-demo.XXXXXX")
trap 'rm -rf "$root"' EXIT
export LOCKLEDGER_ROOT="$root" LOCKLEDGER_ACTOR=demo
ll() { echo "\$ lockledger $*" >&2; "$bin" "$@"; }
# Bold step titles (and jq's colours) only on a terminal, and never with
# NO_COLOR set.
bold='' plain='' jqcolor=-M
if [ -t 1 ] && [ -z "${NO_COLOR+set}" ]; then bold=$'\033[1m' plain=$'\033[0m' jqcolor=-C; fi
step() { printf '\n%s# %s%s\n' "$bold" "$*" "$plain"; }

step "1. acquire: take a lock; stdout is the request id"
rid=$(ll acquire deploy-prod --pid $$ --ttl 60s --intent deploy --intent-version 1.2.0 --metadata commit=abc123 | tail -n1)
echo "$rid"

step "2. status: who holds it, since when, last heartbeat"
ll status deploy-prod

step "3. the lock file is tower-fleet v1 JSON, readable with jq"
jq "$jqcolor" -c . "$root/locks/deploy-prod.lock"

step "4. a second acquire is blocked by the active holder (exit 3)"
set +e; ll acquire deploy-prod --actor ci-bot; echo "exit $?"; set -e

step "5. release by its owner"
ll release deploy-prod --request-id "$rid"

step "6. stale lock: a holder that stopped heartbeating 2 minutes ago (ttl 60s)"
# Another tool's lock file, written the way tower-fleet's shell functions do.
old=$(date -u -d '-3 minutes' +%Y-%m-%dT%H:%M:%SZ); beat=$(date -u -d '-2 minutes' +%Y-%m-%dT%H:%M:%SZ)
jq -n --arg c "$old" --arg h "$beat" '{lock_version:"v1",lock_name:"db-migrate",request_id:"req_old123",
  actor:"nightly",intent:"migrate",intent_version:"1",host_id:"runner-7",pid:4242,created_at:$c,
  last_heartbeat_at:$h,ttl_seconds:60,metadata:{}}' > "$root/locks/db-migrate.lock"
set +e; ll acquire db-migrate; echo "exit $?"; set -e

step "7. --force takes over the stale lock and records lock_stolen with the previous lock and its hash"
rid2=$(ll acquire db-migrate --pid $$ --force | tail -n1)

step "8. another tool takes over a dead holder's lock: lockledger leaves its file alone and records it"
sleep 600 & job=$!
ll acquire nightly --pid "$job" --request-id nightly-1 >/dev/null
kill "$job"; wait "$job" 2>/dev/null || true
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# tower-fleet's lock-manager.sh judged the holder gone and wrote its own lock (its pid: this script).
jq -n --arg t "$now" --argjson pid $$ '{lock_version:"v1",lock_name:"nightly",request_id:"tf-7",actor:"tower-fleet",
  intent:"etl",intent_version:"1",host_id:"'"$(hostname)"'",pid:$pid,created_at:$t,last_heartbeat_at:$t,ttl_seconds:900,
  metadata:{}}' > "$root/locks/nightly.lock.tmp" && mv "$root/locks/nightly.lock.tmp" "$root/locks/nightly.lock"
set +e; ll acquire nightly --force; echo "exit $?"; set -e
ll release nightly --request-id nightly-1 || true

step "9. list every lock that is not free"
ll list

step "10. the audit trail: every action above is a hash-chained event"
ll timeline

step "11. verify recomputes the chain and checks the projections against it"
ll verify
"$bin" release db-migrate --request-id "$rid2" 2>/dev/null
rm -f "$root/locks/nightly.lock"
echo; echo "demo root was $root (removed on exit)"
