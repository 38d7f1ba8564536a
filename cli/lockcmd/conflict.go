package lockcmd

import (
	"errors"
	"strconv"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

// conflictRange is the rule of --conflict-exit-code.
const conflictRange = "0 (run only), 3 or 7-125"

// ConflictError is a refusal because an active holder keeps the lock,
// given the exit code of --conflict-exit-code.
type ConflictError struct {
	Code int
	Err  error
}

func (e *ConflictError) Error() string { return e.Err.Error() }
func (e *ConflictError) Unwrap() error { return e.Err }

// checkConflictCode refuses a --conflict-exit-code that another outcome
// already means: 1, 2, 4, 5 and 6 are lockledger's own (failure, bad input,
// stale, not the holder, no ledger), 126 and up those of a command that could not run
// or died of a signal (a signal during --wait among them), and nothing
// above 255 is an exit code.
func (f *acquireFlags) checkConflictCode() error {
	switch c := f.conflictCode; {
	case c == 0 || c == invocation.ExitBlocked || c >= 7 && c <= 125:
		return nil
	case c == invocation.ExitFailure || c == invocation.ExitUsage || c == invocation.ExitStale || c == invocation.ExitNotHolder || c == invocation.ExitNoLedger:
		return events.Invalid("--conflict-exit-code", strconv.Itoa(c), "must be "+conflictRange+
			": "+strconv.Itoa(c)+" is lockledger's own exit code for another outcome (1 failure, 2 bad input, 4 stale, 5 not the holder, 6 no ledger)")
	case c >= 126 && c <= 255:
		return events.Invalid("--conflict-exit-code", strconv.Itoa(c), "must be "+conflictRange+
			": 126 and up are the codes of a command that could not run or died of a signal")
	}
	return events.Invalid("--conflict-exit-code", strconv.Itoa(f.conflictCode), "must be "+conflictRange+" (an exit code is 0-255)")
}

// conflict gives err the exit code of --conflict-exit-code when it is a
// refusal because an active holder keeps the lock. A stale lock keeps its
// own code (4): what it asks of the caller (--force) differs.
func (f *acquireFlags) conflict(err error) error {
	if f.conflictCode != invocation.ExitBlocked && errors.Is(err, ledger.ErrHeld) {
		return &ConflictError{Code: f.conflictCode, Err: err}
	}
	return err
}
