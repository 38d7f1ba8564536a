package lockcmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// waitReporter says who holds the lock while acquire or run waits: one
// status line rewritten in place on a terminal, one log line otherwise.
// --quiet has neither.
func waitReporter(g *invocation.Globals, lock string) lease.WaitObserver {
	tty := g.StatusLine()
	said := false
	return func(h *ledger.HeldError, waited time.Duration) {
		var by string
		var attrs []any
		if h.Corrupt != nil {
			by, attrs = "an "+h.Corrupt.String(), []any{"holder", h.Corrupt.String()}
		} else {
			by = fmt.Sprintf("%s (%s, pid %d on %s)", h.Holder.Actor, h.Holder.RequestID, h.Holder.PID, h.Holder.HostID)
			if t, err := h.Holder.CreatedTime(); err == nil {
				by += " for " + time.Since(t).Truncate(time.Second).String()
			}
			attrs = []any{"holder", h.Holder.RequestID, "actor", h.Holder.Actor, "pid", h.Holder.PID, "host", h.Holder.HostID}
		}
		if tty {
			termtext.Fprintf(g.IO.ErrOut, "\r\033[Kwaiting for %s: held by %s; waited %s", lock, by, waited.Truncate(time.Second))
		} else if !said {
			said = true
			g.Log.Info("waiting for lock", append([]any{"lock", lock}, attrs...)...)
		}
	}
}

// endWaitLine clears the status line once waiting is over.
func endWaitLine(g *invocation.Globals) {
	if g.StatusLine() {
		fmt.Fprint(g.IO.ErrOut, "\r\033[K")
	}
}

// reportUnrecorded says on stderr when a wait, or the one attempt of a
// caller that does not wait, gave up without its acquire_blocked
// (lease.UnrecordedError): the ledger's writer stayed busy through its
// last attempt. At error level, so that --quiet shows it too:
// quiet hides chatter, never that the record misses an action.
func reportUnrecorded(g *invocation.Globals, lock string, err error) {
	var ue *lease.UnrecordedError
	if errors.As(err, &ue) {
		g.Log.Error("the refusal was NOT recorded in the ledger (no acquire_blocked); the lock was not acquired all the same",
			"lock", lock, "err", ue.Err)
	}
}
