package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lockledger/lockledger/cli/eventfmt"
	"github.com/lockledger/lockledger/cli/invocation"
)

// The codes of run's command that a shell would give, and the base of a
// code for a signal: the codes beyond ExitOK…ExitNoLedger.
const (
	// ExitCannotExecute: run's command exists but cannot be executed.
	ExitCannotExecute = 126
	// ExitCommandNotFound: run's command does not exist.
	ExitCommandNotFound = 127
	// ExitSignalBase: a command that signal N stopped exits ExitSignalBase+N.
	ExitSignalBase = 128
)

// ExitStatus is one line of the exit-code contract.
type ExitStatus struct {
	Code    string // "3", or "126 / 127", "128+N" for families
	Meaning string // plain text; `code` marks what a reader types
}

// ExitStatuses is the exit-code contract, the one table behind `lockledger
// help exit-codes`, the man pages' EXIT STATUS and the table of docs/exit-codes.md.
var ExitStatuses = []ExitStatus{
	{strconv.Itoa(invocation.ExitOK), "ok"},
	{strconv.Itoa(invocation.ExitFailure), "failure: I/O, database, verify found problems"},
	{strconv.Itoa(invocation.ExitUsage), "invalid input: the message names the field and the rule; nothing is written " +
		"(also a root another user can write, naming its owner and mode: see \"Group roots\"; " +
		"and a secret, key or proof file, or standard input, longer than its limit, naming the limit)"},
	{strconv.Itoa(invocation.ExitBlocked), "blocked by an active holder (also when `--wait` runs out); `acquire` and `run` take another code with `-E N`"},
	{strconv.Itoa(invocation.ExitStale), "stale lock: needs `--force`"},
	{strconv.Itoa(invocation.ExitNotHolder), "not the holder, or the lock was lost (also `fence write`: a fencing token below the file's, a later holding wrote it)"},
	{strconv.Itoa(invocation.ExitNoLedger), "no ledger: nothing was ever recorded at the root (or in the database) a read or `project` " +
		"was given; nothing was created (`--json`: `no_ledger`)"},
	{fmt.Sprintf("%d / %d", ExitCannotExecute, ExitCommandNotFound), "`run`: the command cannot be executed / does not exist"},
	{fmt.Sprintf("%d+N", ExitSignalBase), "interrupted by signal N (130 INT, 143 TERM, 129 HUP), e.g. while `--wait` waited, " +
		"or while a secret, key or checkpoint file (a FIFO, a pipe) or standard input waited for its writer; " +
		"`run` exits with its command's own code instead once the command runs " +
		"(and dies of SIGINT itself, shown as 130, when the terminal's Ctrl-C killed the command)"},
}

// plain is s without the backquotes that mark what a reader types.
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

// writeExitCodes writes the exit-code help topic.
func writeExitCodes(w io.Writer) {
	fmt.Fprintln(w, "Exit codes of every lockledger command (scripts may rely on them):")
	fmt.Fprintln(w)
	for _, e := range ExitStatuses {
		writeWrapped(w, fmt.Sprintf("  %-9s ", e.Code), plain(e.Meaning))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "With --json, an error is also one JSON object on stdout naming its kind (lockledger help json).")
}

// writeWrapped writes head then text wrapped at 80 columns, continuation
// lines indented to head's width.
func writeWrapped(w io.Writer, head, text string) {
	for _, line := range eventfmt.Wrap(text, 80-len(head)) {
		fmt.Fprintln(w, head+line)
		head = strings.Repeat(" ", len(head))
	}
}
