#!/usr/bin/env bash
# Says, before the tests run, which of the programs some tests drive are
# missing here: those tests skip (go test shows a skip only with -v), and
# fail instead under CI (LOCKLEDGER_CI=1), where .ci/run installs them.
missing=()
for bin in jq sqlite3 strace chromium python3; do
	command -v "$bin" >/dev/null || missing+=("$bin")
done
if ! command -v initdb >/dev/null && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
	missing+=("PostgreSQL server (initdb)")
fi
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
command -v ssh-agent >/dev/null || missing+=("ssh-agent (openssh-client)")
gobin=$(go env GOBIN)
[ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
if ! command -v litewitness >/dev/null && [ ! -x "$gobin/litewitness" ]; then
	missing+=("litewitness (go install filippo.io/torchwood/cmd/litewitness@v0.6.1)")
fi
if ((${#missing[@]})); then
	list=$(printf '%s, ' "${missing[@]}")
	echo "*** NOTE: not found here: ${list%, }" >&2
	echo "*** the tests that need them are SKIPPED (bash .ci/run installs them and requires every test to run)" >&2
fi
if ! command -v systemd-analyze >/dev/null; then
	echo "*** NOTE: systemd-analyze not found: the example systemd units are run, but not checked by systemd (SKIPPED, also under CI)" >&2
fi
exit 0
