package invocation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

// accessWait bounds how long export and verify wait for the ledger's
// writer lock to record their read: past it they warn and succeed.
const accessWait = 2 * time.Second

// RecordAccess appends the ledger-wide event (ledger_exported,
// ledger_verified) that records a read of the whole audit log, once the
// read is done and its snapshot released, through a short writable open of
// the root. It never fails the command and never changes what the read
// reported: a root that cannot record it (read-only, busy past
// accessWait) gets an error line on stderr instead, which --quiet does not
// hide (it hides chatter, not a record with a read missing), and the
// command still exits 0. It returns the event's seq, 0 when it was not
// recorded.
func (g *Globals) RecordAccess(ctx context.Context, what string, typ events.Type, actor string, payload any) int64 {
	l, err := g.Open(ctx, Rewrites, ledger.WithBusyTimeout(accessWait))
	var seq int64
	if err == nil {
		seq, err = l.RecordAccess(ctx, typ, ledger.Identity{Actor: actor, PID: os.Getppid()}, payload)
		g.Finish(l)
	}
	switch {
	case err == nil:
		g.Log.Debug("recorded", "event", typ, "seq", seq)
		return seq
	case errors.Is(err, ledger.ErrNoLedger):
		g.Log.Info(what+" not recorded: there is no ledger to record it in", g.WhereAttr()...)
	case ctx.Err() != nil:
		g.Log.Error(what+" not recorded in the ledger: interrupted", g.WhereAttr()...)
	default:
		g.Log.Error(what+" not recorded in the ledger: it could not take the event (read-only, no right to write, or busy); "+
			"the "+what+" itself is complete", append(g.WhereAttr(), "err", err)...)
	}
	return 0
}

// WhereAttr names where the ledger is kept, for a log line: the
// database (without its password) with --database, else the root.
func (g *Globals) WhereAttr() []any {
	if g.Database != "" {
		return []any{"database", ledger.RedactURL(g.Database)}
	}
	return []any{"root", AbsPath(g.Root)}
}

// AbsPath is p made absolute for a record.
func AbsPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// ValidActor refuses an --actor that no event could record, before the
// command does anything; none given is the default, taken when recorded.
func ValidActor(actor string) error {
	if actor == "" {
		return nil
	}
	return ledger.ValidateIdentity(ledger.Identity{Actor: actor})
}
