// Package cli is lockledger's command line: Main, the root command and
// its persistent flags, the mapping of errors to exit codes and error
// kinds, and the help topics. The commands live in packages of their own,
// each command an options struct and a run function over what every
// command shares (package invocation): lockcmd (taking, holding and
// giving up locks), auditcmd (verifying, proving, signing, exporting and
// keeping the log) and timelinecmd (reading what happened). Decisions live
// in ledger/.
//
// docs/architecture.md shows where this package sits among the others.
package cli

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/cli/lockcmd"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/fence"
	"github.com/lockledger/lockledger/ledger"
)

// ExitCode maps an error to the exit code of the contract.
func ExitCode(err error) int {
	var ee *invocation.ExitError
	var ue *invocation.UsageError
	var ie *invocation.Interrupt
	var ce *lockcmd.ConflictError
	var xe *lockcmd.ExecError
	switch {
	case err == nil:
		return invocation.ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ie):
		return 128 + int(ie.Signal)
	case errors.As(err, &ce):
		return ce.Code
	case errors.As(err, &xe):
		return xe.Code
	case errors.As(err, &ue), errors.Is(err, events.ErrInvalid), errors.Is(err, ledger.ErrUntrustedRoot):
		return invocation.ExitUsage
	case errors.Is(err, ledger.ErrHeld):
		return invocation.ExitBlocked
	case errors.Is(err, ledger.ErrStale):
		return invocation.ExitStale
	case errors.Is(err, ledger.ErrNotHolder), errors.Is(err, ledger.ErrLost), errors.Is(err, fence.ErrStale):
		return invocation.ExitNotHolder
	case errors.Is(err, ledger.ErrNoLedger):
		return invocation.ExitNoLedger
	case errors.Is(err, ledger.ErrNotALedger), errors.Is(err, ledger.ErrLedgerGone):
		return invocation.ExitFailure // the root is not one lockledger may write: not the caller's input
	}
	return invocation.ExitFailure
}

// Main runs the command line and returns the process exit code, unless
// its command asks to end the process by a signal instead
// (invocation.ExitError.Signal: run whose command Ctrl-C killed).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &invocation.Globals{IO: invocation.IO{In: stdin, Out: stdout, ErrOut: stderr}}
	root := newRootFor(g, args)
	args = runArgs(root, args)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// A signal cancels the context of the command that runs; help, usage
	// errors and --version run none, and are spared os/signal's first
	// use, which starts a thread of its own and waits on it for each
	// signal (a quarter of a millisecond).
	ran := false
	stop := func() syscall.Signal { return 0 }
	for _, c := range allCommands(root) {
		if c.RunE != nil {
			run := c.RunE
			c.RunE = func(cmd *cobra.Command, a []string) error {
				ran = true
				sigs := []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
				if cmd.Annotations[invocation.ForwardsSignals] != "" {
					sigs = append(sigs, syscall.SIGQUIT)
				}
				// A signal the process started with ignored (INT
				// or HUP: nohup, an asynchronous command of a
				// script without job control) stays ignored, by
				// run's command too, as flock's: handled, it
				// would end the command nohup was for, and be
				// the default again for the command run starts.
				sigs = slices.DeleteFunc(sigs, signal.Ignored)
				var ctx context.Context
				ctx, stop = notifyContext(cmd.Context(), g, sigs...)
				cmd.SetContext(ctx)
				return run(cmd, a)
			}
		}
	}
	err := root.ExecuteContext(context.Background())
	if err != nil && !ran {
		if uerr := unknownCommand(root, args); uerr != nil {
			err = uerr
		} else if ferr := unknownFlag(root, args, err); ferr != nil {
			err = ferr
		}
		err = &invocation.UsageError{Err: err}
		g.JSON = g.JSON || askedForJSON(args)
	}
	var ee *invocation.ExitError
	var ie *invocation.Interrupt
	if sig := stop(); sig != 0 && err != nil && !errors.As(err, &ee) && !errors.As(err, &ie) {
		// An exact code (run's, its command's) stands, and so does the
		// context's cause a command returned as it was; any other failure
		// after a signal is the signal's.
		err = &invocation.Interrupt{Signal: sig, Err: err}
	}
	code := g.FinishJQ(report(g, err))
	if errors.As(err, &ee) && ee.Signal != 0 {
		endBy(ee.Signal)
	}
	return code
}

// endBy ends the process killed by sig, its handling given back to the
// runtime's first, whose handler ends the process on a thread of its own:
// waited for here, so that the exit code does not win the race. Main
// returns the exit code at once where sig is ignored (the process started
// with it ignored, which Main then keeps), and as a PID namespace's init
// (a container's first process), which the kernel keeps from its own
// signal: the runtime would exit 2 then.
func endBy(sig syscall.Signal) {
	if os.Getpid() == 1 || signal.Ignored(sig) {
		return
	}
	signal.Reset(sig)
	if syscall.Kill(os.Getpid(), sig) == nil {
		time.Sleep(endDelay)
	}
}

// endDelay bounds endBy's wait for its signal to end the process.
const endDelay = time.Second

// notifyContext makes the process's one handler of sigs for the command
// that runs: the first signal cancels ctx (its cause an
// *invocation.Interrupt), and each is passed on to g.Signals for a command
// that forwards them. stop ends the handling, joins its goroutine and
// returns the first signal (0 if none): once signal.Stop returns no signal
// is still being delivered, so a signal that cancelled anything the
// command waited on is known here.
func notifyContext(parent context.Context, g *invocation.Globals, sigs ...os.Signal) (context.Context, func() syscall.Signal) {
	ch, relay := make(chan os.Signal, 8), make(chan os.Signal, 8)
	g.Signals = relay
	signal.Notify(ch, sigs...)
	ctx, cancel := context.WithCancelCause(parent)
	got := func(s os.Signal) { cancel(&invocation.Interrupt{Signal: s.(syscall.Signal)}) } // the first cause stays
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case s := <-ch:
				got(s)
				select {
				case relay <- s:
				default: // a command that forwards nothing
				}
			case <-quit:
				return
			}
		}
	}()
	return ctx, func() syscall.Signal {
		signal.Stop(ch)
		close(quit)
		<-done
		select {
		case s := <-ch:
			got(s)
		default:
		}
		sig := invocation.Interrupted(ctx)
		cancel(nil)
		return sig
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
func report(g *invocation.Globals, err error) int {
	code := ExitCode(err)
	if err == nil {
		return code
	}
	var ee *invocation.ExitError
	if errors.As(err, &ee) {
		return code // the command already said what happened
	}
	obj := errorObject(err)
	if g.JSON {
		invocation.WriteJSON(g.IO.Out, obj)
	}
	var ce *lockcmd.ConflictError
	if errors.As(err, &ce) && ce.Code == invocation.ExitOK && g.Quiet {
		// -E 0 makes a held lock a skip, not a failure: -q keeps it as
		// silent as flock -n -E 0 is.
		return code
	}
	msg := err.Error()
	if code == invocation.ExitUsage {
		var ue *invocation.UsageError
		if errors.As(err, &ue) {
			msg += " (see --help)"
		}
	}
	delete(obj, "message")
	attrs := []any{"exit_code", code}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		attrs = append(attrs, k, obj[k])
	}
	g.SayError(msg, attrs...)
	return code
}

// Command is the command tree as Main builds it, for generating
// documentation (man pages, completion scripts) outside a run.
func Command() *cobra.Command {
	g := &invocation.Globals{IO: invocation.IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}}
	return newRoot(g)
}
