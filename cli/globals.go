package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/lockledger/lockledger/internal/termtext"
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

// UsageError marks a command-line error found before any command ran.
type UsageError struct{ err error }

func (e *UsageError) Error() string { return e.err.Error() }
func (e *UsageError) Unwrap() error { return e.err }

// IO is what a command reads and writes.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Globals are the persistent flags.
type Globals struct {
	IO        IO
	Root      string
	Database  string
	JSON      bool
	LogLevel  string
	LogFormat string
	Quiet     bool
	Group     string
	Log       *slog.Logger
	Sign      signFlags
	trust     *trust.Store // trustStore
	key       *trust.Key   // defaultKey
	JQExpr    string
	jq        *jqFilter // --jq: stdout held back until the command is done
}

// SayError writes a command's final failure on stderr in the form of its
// log: one JSON object per line with --log-format json (so a log shipper
// reading stderr gets no plain line), else "lockledger: MSG".
func (g *Globals) SayError(msg string, attrs ...any) {
	if g.LogFormat == "json" {
		slog.New(slog.NewJSONHandler(g.IO.ErrOut, nil)).Error(msg, attrs...)
		return
	}
	fmt.Fprintf(g.IO.ErrOut, "lockledger: %s\n", termtext.Escape(msg))
}

func WriteJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
