// Package cli is lockledger's command line: flag parsing, output and exit
// codes. Decisions live in ledger/; each command here is an options struct
// and a run function.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

// Exit codes (DESIGN.md).
const (
	ExitOK        = 0
	ExitFailure   = 1
	ExitUsage     = 2
	ExitBlocked   = 3
	ExitStale     = 4
	ExitNotHolder = 5
)

// ExitError carries an exact exit code (run uses it for the child's code).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// usageError marks a command-line error found before any command ran.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// ExitCode maps an error to the exit code of the contract.
func ExitCode(err error) int {
	var ee *ExitError
	var ue *usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ue), errors.Is(err, events.ErrInvalid):
		return ExitUsage
	case errors.Is(err, ledger.ErrHeld):
		return ExitBlocked
	case errors.Is(err, ledger.ErrStale):
		return ExitStale
	case errors.Is(err, ledger.ErrNotHolder), errors.Is(err, ledger.ErrLost):
		return ExitNotHolder
	case errors.Is(err, ledger.ErrNotALedger), errors.Is(err, ledger.ErrLedgerGone):
		return ExitFailure // the root is not one lockledger may write: not the caller's input
	}
	return ExitFailure
}

// IO is what a command reads and writes.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// globals are the persistent flags.
type globals struct {
	io        IO
	root      string
	json      bool
	logLevel  string
	logFormat string
	log       *slog.Logger
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g := &globals{io: IO{In: stdin, Out: stdout, ErrOut: stderr}}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ran := false
	for _, c := range allCommands(root) {
		if c.RunE != nil {
			run := c.RunE
			c.RunE = func(cmd *cobra.Command, a []string) error {
				ran = true
				return run(cmd, a)
			}
		}
	}
	err := root.ExecuteContext(ctx)
	if err != nil && !ran {
		err = &usageError{err}
	}
	return report(g, err)
}

func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, allCommands(sub)...)
	}
	return out
}

// report prints err once, in the form the caller asked for, and maps it.
func report(g *globals, err error) int {
	code := ExitCode(err)
	if err == nil {
		return code
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return code // the command already said what happened
	}
	if g.json {
		writeJSON(g.io.Out, errorObject(err))
	}
	msg := err.Error()
	if code == ExitUsage {
		var ue *usageError
		if errors.As(err, &ue) {
			msg += " (see --help)"
		}
	}
	fmt.Fprintf(g.io.ErrOut, "lockledger: %s\n", msg)
	return code
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
