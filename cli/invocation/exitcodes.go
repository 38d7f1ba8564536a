package invocation

import (
	"fmt"
	"syscall"
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
type ExitError struct {
	Code int
	// Signal, where not 0, ends the process instead once the command has
	// said everything (cli.Main): killed by it, as the job that a shell
	// runs dies of the terminal's Ctrl-C, so that the script that ran it
	// stops too (a shell goes on after a child that only exits 130).
	Signal syscall.Signal
}

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// UsageError marks a command-line error found before any command ran.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
