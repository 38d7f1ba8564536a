package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
)

// The kinds of error a --json error object names in "error": the one
// vocabulary of every command.
const (
	KindInvalidInput    = "invalid_input"
	KindNoLedger        = "no_ledger"
	KindLockBlocked     = "lock_blocked"
	KindLockStale       = "lock_stale"
	KindNotHolder       = "not_holder"
	KindLockLost        = "lock_lost"
	KindBrokenChain     = "broken_chain"
	KindCommandNotFound = "command_not_found"
	KindCannotExecute   = "cannot_execute"
	KindInterrupted     = "interrupted"
	KindFailure         = "failure"
	KindFenceRejected   = "fence_rejected"
	KindCommitUnknown   = "commit_unknown"
)

// ErrorKind is one row of the error-kind table.
type ErrorKind struct {
	Kind    string
	Exit    string // the exit code that goes with it
	Meaning string // plain text; `code` marks what a reader types
}

// ErrorKinds is every kind a --json error object can name, the one table
// behind `lockledger help json` and docs/json.md.
var ErrorKinds = []ErrorKind{
	{KindInvalidInput, strconv.Itoa(invocation.ExitUsage), "bad input: a flag, an argument or a value breaks a rule (an unknown flag, " +
		"a missing argument, a malformed lock name, a root another user can write); `field`, `value` and `rule` name it " +
		"when the input is a value; nothing was written"},
	{KindNoLedger, strconv.Itoa(invocation.ExitNoLedger), "nothing was ever recorded at the root (or in the database); nothing was created; `where` names it"},
	{KindLockBlocked, strconv.Itoa(invocation.ExitBlocked) + " (or -E N)", "the lock has an active holder (`held_by`), also when `--wait` ran out (`waited_seconds`)"},
	{KindLockStale, strconv.Itoa(invocation.ExitStale), "the holder stopped heartbeating (`stale_since`, `held_by`): `--force` takes it over"},
	{KindNotHolder, strconv.Itoa(invocation.ExitNotHolder), "the request does not hold the lock (`held_by` is who does, or null); " +
		"or it does and the caller is not its holder (`denied` names the rule: another uid than the one that acquired it, " +
		"or a running `lockledger run` holds it, or the release secret given is wrong; `suggestion` is the `release --force` to use)"},
	{KindLockLost, strconv.Itoa(invocation.ExitNotHolder), "the request held the lock and lost it (taken over, or its TTL ran out)"},
	{KindBrokenChain, strconv.Itoa(invocation.ExitFailure), "the hash chain does not verify (`first_bad`, `problem_count`): nothing was written"},
	{KindCommandNotFound, strconv.Itoa(ExitCommandNotFound), "`run`: the command does not exist (`command`)"},
	{KindCannotExecute, strconv.Itoa(ExitCannotExecute), "`run`: the command exists but cannot be executed (`command`)"},
	{KindInterrupted, "128+N", "a signal stopped the command (`signal`); `cause` is the error object of what it stopped"},
	{KindFailure, strconv.Itoa(invocation.ExitFailure), "anything else: I/O, the database, a root lockledger will not write to"},
	{KindFenceRejected, strconv.Itoa(invocation.ExitNotHolder), "`fence write`: the fencing token is below the one the file has seen " +
		"(`fence`, `resource`, `stale_token`, `current_token`, as in the event): a later holding of the lock wrote it; nothing was written"},
	{KindCommitUnknown, strconv.Itoa(invocation.ExitFailure), "the database's answer to the write's commit was lost and the ledger " +
		"could not be read back to see what it did: the action may be recorded or not; `lockledger status` or `history` shows which " +
		"before it is tried again (made again, it could be made twice)"},
}

// writeJSONTopic writes the JSON help topic.
func writeJSONTopic(w io.Writer) {
	fmt.Fprintln(w, "With --json, every command writes one JSON document on stdout and nothing else there")
	fmt.Fprintln(w, "(the log and progress lines go to stderr):")
	fmt.Fprintln(w)
	writeWrapped(w, "  ", "on success, the command's result: an object (acquire, release, status, run, ...) "+
		"or an array (list, timeline, history: --json is --format json; --format jsonl gives one event per line);")
	writeWrapped(w, "  ", "on failure, one object {\"error\": KIND, \"message\": TEXT, ...} with the exit code of the table below.")
	writeWrapped(w, "  ", "export writes JSON lines (one event per line) unless --format csv; help, --help and completion "+
		"write text; metrics refuses --json (exit 2).")
	writeWrapped(w, "  ", "--jq EXPR implies --json and prints EXPR's results on each document instead "+
		"(a string bare, its control characters escaped as the text output's, anything else as compact JSON, "+
		"one per line), as gh --jq; e.g. --jq .request_id.")
	writeWrapped(w, "  ", "run --json: CMD's own stdout passes through untouched; run's object is written after CMD "+
		"has exited, as the last line of stdout (tail -n 1 picks it when CMD's output ends with a newline).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Error kinds (\"error\"), with their exit codes:")
	fmt.Fprintln(w)
	for _, k := range ErrorKinds {
		writeWrapped(w, fmt.Sprintf("  %-17s %-11s ", k.Kind, k.Exit), plain(k.Meaning))
	}
}

// textOnly are the commands whose output has a format of its own that
// --json cannot give: --json is refused rather than ignored.
var textOnly = map[string]string{
	"metrics": "metrics writes the Prometheus text format (or serves it); it has no JSON form",
}

// checkJSONFlag refuses --json for a command in textOnly.
func checkJSONFlag(cmd *cobra.Command, json bool) error {
	if why, ok := textOnly[cmd.Name()]; ok && json {
		return events.Invalid("--json", "", why)
	}
	return nil
}

// askedForJSON says whether args hold --json before any "--": a command
// line refused before its flags were all parsed still answers in JSON.
func askedForJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true", "--json=1":
			return true
		}
	}
	return false
}
