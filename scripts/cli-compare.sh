#!/usr/bin/env bash
# cli-compare.sh OLD NEW [OLDSRC NEWSRC]: runs two lockledger binaries over
# the same invocations (the help of every command and subcommand, help
# topics, typos, bad flags, completion scripts and __complete answers,
# commands that run against a fresh root) and prints every difference in
# stdout, stderr or exit code; with two source trees, also the man pages
# internal/cmd/mangen writes from each. Build both binaries with the same
# -ldflags so that --version agrees. Exits 1 on any difference.
set -u
old=$1 new=$2 oldsrc=${3:-} newsrc=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export NO_COLOR=1 COLUMNS=100
unset LOCKLEDGER_ROOT LOCKLEDGER_DATABASE_URL LOCKLEDGER_GROUP LOCKLEDGER_LOG_LEVEL LOCKLEDGER_SIGNING_KEY LOCKLEDGER_ACTOR
realhome=$HOME
export LOCKLEDGER_TRUST_DIR=$work/trust HOME=$work/home XDG_STATE_HOME=$work/state
mkdir -p "$HOME"

# commands lists the command paths below "$@", from their help.
commands() {
	"$new" "$@" --help | awk '/^Available Commands:/{on=1;next} on&&/^$/{on=0} on{print $1}' |
		while read -r c; do
			[ "$c" = help ] && [ $# -eq 0 ] && continue
			echo "$* $c"
			commands "$@" "$c"
		done
}

list=$work/invocations
{
	printf '%s\n' '' '--help' '-h' 'help' '--version' 'version' 'version --json' '--json' '-q' \
		'help environment' 'help exit-codes' 'help json' 'help bogus' 'help status' 'help trust pin' 'help trust bogus' 'help help' \
		'completion' 'completion bash' 'completion zsh' 'completion fish' 'completion powershell' 'completion --help' \
		'stats' 'statu' 'lst' 'verfy' 'acquir' 'stat' 'bogus' 'bogus --json' 'trust bogus' 'checkpoint bogus' 'Status' 'list x' \
		'--bogus' '--bogus status' '--bogus x status' 'status --bogus' '--root' '--help status' '-h status' '-q --help status' \
		'status --help --json' '--json bogus' '--root /nonexistent/x --help' 'help --help' 'version --bogus' 'metrics --json' \
		'-- status' 'status -- x' '--jq .version version' '--jq' \
		'__complete ""' '__complete st' '__complete status ""' '__complete timeline --format ""' '__complete timeline --type ""' \
		'__complete acquire --file ""' '__complete status --file ""' '__complete help ""' '__complete help trust ""' \
		'__complete trust ""' '__complete --json ""' '__complete acquire --' '__complete run x ""' '__complete export --format ""' \
		'__complete history ""' '__completeNoDesc ""' '__complete completion ""' '__complete __watch-holder --' \
		'__watch-holder --help' '__record-loss --help' '__watch-holder' '__record-loss'
	for c in $(commands | tr ' ' '#') __watch-holder __record-loss; do
		c=${c//#/ }
		printf '%s\n' "$c --help" "$c -h" "help $c" "__complete $c \"\"" "__complete $c --" "$c --bogus"
	done
} > "$list"

diffs=0
n=0
# run ARGS...: both binaries, each in a fresh root of its own (with a
# ledger when $init is set).
run() {
	local side bin
	for side in old new; do
		bin=$old
		[ $side = new ] && bin=$new
		rm -rf "$work/root" "$work/trust"
		mkdir -p "$work/root"
		if [ -n "${init:-}" ]; then
			LOCKLEDGER_ROOT=$work/root "$bin" --quiet init >/dev/null 2>&1
		fi
		(cd "$work" && LOCKLEDGER_ROOT=$work/root "$bin" "$@" >"$work/$side.out" 2>"$work/$side.err" </dev/null; echo $? >"$work/$side.code")
		# what cannot repeat: ids, keys, times, durations, pids
		sed -E -i 's/req_[0-9A-Z]{26}/req_X/g; s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z?/TIME/g; s/[0-9]+(\.[0-9]+)?(ms|µs|s)\b/DUR/g; s/pid[ =:"]+[0-9]+/pid N/g; s/[0-9a-f]{32,64}/HEX/g; s/\+[0-9a-f]{8}\+[A-Za-z0-9+\/]{40,}=*/+KEY/g; s/[0-9]{2}:[0-9]{2}:[0-9]{2}/CLOCK/g' \
			"$work/$side.out" "$work/$side.err"
	done
	n=$((n + 1))
	local f
	for f in out err code; do
		if ! cmp -s "$work/old.$f" "$work/new.$f"; then
			echo "DIFF ($f): lockledger $*"
			diff "$work/old.$f" "$work/new.$f" | head -20
			diffs=$((diffs + 1))
		fi
	done
}

while IFS= read -r line; do
	eval "set -- $line"
	run "$@"
done <"$list"

# commands that run: exit codes and what they print, in a fresh root
for line in 'init' 'list' 'status x' 'status --json x' 'acquire x' 'acquire --json x' 'run x -- true' 'run x true' \
	'run x sh -c "exit 3"' 'run -w 0 x -- true' 'verify' 'history x' 'timeline' 'who x' 'replay' 'export' 'metrics' \
	'trust show' 'release x --request-id req_01ARZ3NDEKTSV4RRFFQ69G5FAV' 'heartbeat x' 'status' 'status x y' 'acquire "bad name"' \
	'keygen' 'prove' 'verify-proof' 'checkpoint' 'project' 'archive' 'prune' 'unprune' 'import' 'steal x'; do
	eval "set -- $line"
	init= run "$@"
	init=1 run "$@"
done

if [ -n "$newsrc" ]; then
	for side in old new; do
		src=$oldsrc
		[ $side = new ] && src=$newsrc
		(cd "$src" && HOME=$realhome go run ./internal/cmd/mangen -dir "$work/man-$side") || { echo "mangen failed in $src"; diffs=$((diffs + 1)); }
	done
	if ! diff -r "$work/man-old" "$work/man-new" >/dev/null; then
		echo "DIFF: man pages"
		diff -r "$work/man-old" "$work/man-new" | head -40
		diffs=$((diffs + 1))
	fi
	echo "man pages: $(ls "$work/man-new" | wc -l) compared"
fi
echo "invocations: $n compared, $diffs differences"
[ $diffs -eq 0 ]
