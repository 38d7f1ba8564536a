#!/usr/bin/env bash
# A short scripted tour of lockledger on a throwaway root. Each command is
# shown as `$ lockledger ...` on stdout, followed by its own output, so
# `make demo > tour.txt` is a transcript (lockledger's log lines go to
# stderr). The holder of a one-shot acquire is the calling process; inside
# $(...) that is a subshell, so the tour passes --pid $$ (this script) there.
set -euo pipefail
bin=$(cd "$(dirname "${1:-bin/lockledger}")" && pwd)/$(basename "${1:-bin/lockledger}")
demo=$(mktemp -d "${TMPDIR:-/tmp}/lockledger-demo.XXXXXX")
root=$demo/root page=$demo/timeline.html
cleanup() { rm -rf "$root" "$demo/trust"; }
trap cleanup EXIT
# A trust store of the tour's own: the throwaway root is neither pinned in
# nor signed with the user's (~/.config/lockledger).
export LOCKLEDGER_ROOT="$root" LOCKLEDGER_TRUST_DIR="$demo/trust" LOCKLEDGER_ACTOR=demo
# shown prints the command line as a shell would take it back.
shown() {
	local a line='$ lockledger'
	for a; do
		if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then line+=" $a"; else line+=" '${a//\'/\'\\\'\'}'"; fi
	done
	echo "$line"
}
# Bold step titles (and jq's colours) only on a terminal, and never with
# NO_COLOR set.
bold='' plain='' jqcolor=-M
if [ -t 1 ] && [ -z "${NO_COLOR+set}" ]; then bold=$'\033[1m' plain=$'\033[0m' jqcolor=-C; fi
# lockledger redraws its progress line (CR, ESC[K) while it waits on a
# terminal; with NO_COLOR its stderr goes through a pipe, so no escape
# code reaches the terminal.
lockledger() {
	if [ -n "${NO_COLOR+set}" ] && [ -t 2 ]; then
		{ "$bin" "$@" 2>&1 1>&3 3>&- | cat >&2; } 3>&1
		return
	fi
	"$bin" "$@"
}
ll() { shown "$@"; lockledger "$@"; }
# llout VAR ARGS...: ll, with lockledger's stdout also kept in VAR.
llout() {
	local -n into=$1
	shift
	shown "$@"
	into=$(lockledger "$@")
	echo "$into"
}
step() { printf '\n%s# %s%s\n' "$bold" "$*" "$plain"; }
# refused CODE MEANING ARGS...: ll a command the tour expects to be refused
# with exit CODE, and say what the refusal means; any other outcome stops
# the tour, so no refusal is hidden and none is made up.
refused() {
	local want=$1 meaning=$2 got=0
	shift 2
	shown "$@"
	lockledger "$@" || got=$?
	echo "exit $got: $meaning"
	if [ "$got" != "$want" ]; then
		echo "the tour expected exit $want here" >&2
		exit 1
	fi
}

step "1. acquire: take a lock; stdout is the request id"
llout rid acquire deploy-prod --pid $$ --ttl 60s --intent deploy --intent-version 1.2.0 --metadata commit=abc123
held_at=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)

step "2. status: who holds it, since when, last heartbeat"
ll status deploy-prod

step "3. the lock file is tower-fleet v1 JSON, readable with jq"
jq "$jqcolor" -c . "$root/locks/deploy-prod.lock"

step "4. a second acquire is blocked by the active holder (exit 3)"
refused 3 "refused: an active holder has the lock (recorded as acquire_blocked)" acquire deploy-prod --actor ci-bot

step "5. release by its owner"
ll release deploy-prod --request-id "$rid"

step "6. run: hold a lock exactly as long as a command runs (heartbeats, release, exit code)"
ll run nightly-etl --ttl 30s -- sh -c 'echo "etl: holding $LOCKLEDGER_LOCK with fencing token $LOCKLEDGER_FENCING_TOKEN"'

step "7. --wait: queue behind the holder instead of failing"
echo "$(shown run deploy-prod --actor ci-bot -- sleep 1) &"
"$bin" -q run deploy-prod --actor ci-bot -- sleep 1 & job=$!
# Until the job holds the lock, or has already come and gone (its second
# can pass between two polls on a busy machine).
for _ in $(seq 100); do
	kill -0 "$job" 2>/dev/null || break
	"$bin" status deploy-prod --check >/dev/null 2>&1 || break
	sleep 0.05
done
llout rid acquire deploy-prod --pid $$ --wait 10s
wait "$job"
ll release deploy-prod --request-id "$rid"

step "8. a shared lock: readers together, a writer waits for all of them"
llout r1 acquire reports-db --pid $$ --shared --actor reader-1
llout r2 acquire reports-db --pid $$ --shared --actor reader-2
ll status reports-db
refused 3 "refused: an exclusive acquire waits for every shared holder to let go" acquire reports-db --actor migrator
ll release reports-db --request-id "$r1"
ll release reports-db --request-id "$r2"

step "9. another tool's stale lock: tower-fleet's db-migrate file, last heartbeat 2 minutes ago (ttl 60s)"
# Another tool's lock file, written the way tower-fleet's shell functions do.
old=$(date -u -d '-3 minutes' +%Y-%m-%dT%H:%M:%SZ); beat=$(date -u -d '-2 minutes' +%Y-%m-%dT%H:%M:%SZ)
jq -n --arg c "$old" --arg h "$beat" '{lock_version:"v1",lock_name:"db-migrate",request_id:"req_old123",
  actor:"nightly",intent:"migrate",intent_version:"1",host_id:"runner-7",pid:4242,created_at:$c,
  last_heartbeat_at:$h,ttl_seconds:60,metadata:{}}' > "$root/locks/db-migrate.lock"
refused 4 "refused: the holder (tower-fleet's file) is stale; --force takes it over" acquire db-migrate

step "10. --force takes over that file: lock_stolen, reason foreign_lock, with the previous lock and its hash"
llout rid2 acquire db-migrate --pid $$ --force

step "11. another tool takes over a dead holder's lock: lockledger leaves its file alone and records it"
# bash runs the EXIT trap in a child it forked for `cmd &` that a signal
# ends before the child starts cmd: the holder starts with none to run.
trap - EXIT
sleep 600 & job=$!
trap cleanup EXIT
ll acquire nightly --pid "$job" --request-id nightly-1
echo "\$ kill $job   # nightly-1's holder process dies"
kill "$job"
wait "$job" 2>/dev/null || echo "pid $job: killed (exit $?)"
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# tower-fleet's lock-manager.sh judged the holder gone and wrote its own lock (its pid: this script).
jq -n --arg t "$now" --argjson pid $$ '{lock_version:"v1",lock_name:"nightly",request_id:"tf-7",actor:"tower-fleet",
  intent:"etl",intent_version:"1",host_id:"'"$(hostname)"'",pid:$pid,created_at:$t,last_heartbeat_at:$t,ttl_seconds:900,
  metadata:{}}' > "$root/locks/nightly.lock.tmp" && mv "$root/locks/nightly.lock.tmp" "$root/locks/nightly.lock"
refused 3 "refused: tower-fleet's lock is live (its pid runs); --force takes over only a stale or dead holder" acquire nightly --force
refused 5 "refused: nightly-1 lost the lock to tower-fleet's file (recorded, released as displaced); nothing of its own is left to release" \
	release nightly --request-id nightly-1

step "12. list every lock that is not free"
ll list

step "13. who held deploy-prod at a moment in the past (here: during step 1)"
ll who deploy-prod --at "$held_at"

step "14. the audit trail: every action above is a hash-chained event"
ll timeline

step "15. the same timeline as one self-contained page, for a browser"
ll timeline --format html -o "$page"
echo "wrote $page"

step "16. verify recomputes the chain and checks the projections against it"
ll verify

step "17. clean up: release the lock taken in step 10"
ll release db-migrate --request-id "$rid2"
rm -f "$root/locks/nightly.lock"
echo
echo "demo root was $root (removed on exit)"
echo "timeline page: $page (kept; open it in a browser)"
