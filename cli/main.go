// Package cli is lockledger's command line: flag parsing, output and exit
// codes. Decisions live in ledger/; each command here is an options struct
// and a run function.
//
// docs/architecture.md shows where this package sits among the others.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// Exit codes: the contract scripts rely on. ExitCode maps the library's
// errors to them; the library itself knows nothing of exit codes.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailure: anything else, including ledger.ErrNotALedger,
	// ledger.ErrLedgerGone and ledger.ErrBrokenChain (a root or log that
	// lockledger will not write to is not the caller's input).
	ExitFailure = 1
	// ExitUsage: bad input (a usage error, or events.ErrInvalid, which
	// ledger.ErrInvalid is, or ledger.ErrUntrustedRoot, a root another
	// user can write); nothing was written.
	ExitUsage = 2
	// ExitBlocked: ledger.ErrHeld, the lock has an active holder.
	ExitBlocked = 3
	// ExitStale: ledger.ErrStale, the holder stopped heartbeating
	// (--force takes it over).
	ExitStale = 4
	// ExitNotHolder: ledger.ErrNotHolder or ledger.ErrLost, the caller
	// does not (or no longer) hold the lock.
	ExitNotHolder = 5
	// ExitNoLedger: ledger.ErrNoLedger, nothing was ever recorded at the
	// root (or in the database) a command was to read; nothing was
	// created. A read never answers "free" for a ledger that is not there.
	ExitNoLedger = 6
)

// ExitError carries an exact exit code (run uses it for the child's code).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// usageError marks a command-line error found before any command ran.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// InterruptedError is a command that failed after a signal asked it to
// stop (a wait given up on Ctrl-C): it exits 128+N, as a shell reports a
// command killed by signal N, and not with the code of what it gave up.
type InterruptedError struct {
	Signal syscall.Signal
	Err    error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted by %s: %v", unix.SignalName(e.Signal), e.Err)
}
func (e *InterruptedError) Unwrap() error { return e.Err }

// ExitCode maps an error to the exit code of the contract.
func ExitCode(err error) int {
	var ee *ExitError
	var ue *usageError
	var ie *InterruptedError
	var ce *ConflictError
	var xe *ExecError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ie):
		return 128 + int(ie.Signal)
	case errors.As(err, &ce):
		return ce.Code
	case errors.As(err, &xe):
		return xe.Code
	case errors.As(err, &ue), errors.Is(err, events.ErrInvalid), errors.Is(err, ledger.ErrUntrustedRoot):
		return ExitUsage
	case errors.Is(err, ledger.ErrHeld):
		return ExitBlocked
	case errors.Is(err, ledger.ErrStale):
		return ExitStale
	case errors.Is(err, ledger.ErrNotHolder), errors.Is(err, ledger.ErrLost):
		return ExitNotHolder
	case errors.Is(err, ledger.ErrNoLedger):
		return ExitNoLedger
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
	database  string
	json      bool
	logLevel  string
	logFormat string
	quiet     bool
	group     string
	log       *slog.Logger
	sign      signFlags
	trust     *trust.Store // trustStore
	key       *trust.Key   // defaultKey
	jqExpr    string
	jq        *jqFilter // --jq: stdout held back until the command is done
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := notifyContext(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	g := &globals{io: IO{In: stdin, Out: stdout, ErrOut: stderr}}
	root := newRoot(g)
	args = runArgs(root, args)
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
		if uerr := unknownCommand(root, args); uerr != nil {
			err = uerr
		}
		err = &usageError{err}
		g.json = g.json || askedForJSON(args)
	}
	var ee *ExitError
	if sig := stop(); sig != 0 && err != nil && !errors.As(err, &ee) {
		// An exact code (run's, its command's) stands; any other failure
		// after a signal is the signal's.
		err = &InterruptedError{Signal: sig, Err: err}
	}
	return g.finishJQ(report(g, err))
}

// notifyContext is signal.NotifyContext that also tells which signal
// arrived. stop ends the notification and returns the signal (0 if none):
// once signal.Stop returns no signal is still being delivered, so a signal
// that cancelled anything a command waited on (run's own handler gets
// the same signal) is known here.
func notifyContext(sigs ...os.Signal) (context.Context, func() syscall.Signal) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	ctx, cancel := context.WithCancelCause(context.Background())
	quit, done := make(chan struct{}), make(chan struct{})
	var got os.Signal
	go func() {
		defer close(done)
		select {
		case got = <-ch:
			cancel(fmt.Errorf("received %s", got))
		case <-quit:
		}
	}()
	return ctx, func() syscall.Signal {
		signal.Stop(ch)
		close(quit)
		<-done
		if got == nil {
			select {
			case got = <-ch:
			default:
			}
		}
		cancel(nil)
		if s, ok := got.(syscall.Signal); ok {
			return s
		}
		return 0
	}
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
	obj := errorObject(err)
	delete(obj, "message")
	attrs := []any{"exit_code", code}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		attrs = append(attrs, k, obj[k])
	}
	g.sayError(msg, attrs...)
	return code
}

// sayError writes a command's final failure on stderr in the form of its
// log: one JSON object per line with --log-format json (so a log shipper
// reading stderr gets no plain line), else "lockledger: MSG".
func (g *globals) sayError(msg string, attrs ...any) {
	if g.logFormat == "json" {
		slog.New(slog.NewJSONHandler(g.io.ErrOut, nil)).Error(msg, attrs...)
		return
	}
	fmt.Fprintf(g.io.ErrOut, "lockledger: %s\n", termtext.Escape(msg))
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Command is the command tree as Main builds it, for generating
// documentation (man pages, completion scripts) outside a run.
func Command() *cobra.Command {
	g := &globals{io: IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}}
	return newRoot(g)
}
