package cli

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

// recordAccess appends the ledger-wide event (ledger_exported,
// ledger_verified) that records a read of the whole audit log, once the
// read is done and its snapshot released, through a short writable open of
// the root. It never fails the command and never changes what the read
// reported: a root that cannot record it (read-only, busy past
// accessWait, no ledger for verify --file) gets a warning on stderr
// instead. It returns the event's seq, 0 when it was not recorded.
func (g *globals) recordAccess(ctx context.Context, what string, typ events.Type, actor string, payload any) int64 {
	l, err := g.open(ctx, rewrites, ledger.WithBusyTimeout(accessWait))
	var seq int64
	if err == nil {
		seq, err = l.RecordAccess(ctx, typ, ledger.Identity{Actor: actor, PID: os.Getppid()}, payload)
		g.finish(l)
	}
	switch {
	case err == nil:
		g.log.Debug("recorded", "event", typ, "seq", seq)
		return seq
	case errors.Is(err, ledger.ErrNoLedger):
		g.log.Info(what+" not recorded: there is no ledger to record it in", g.whereAttr()...)
	case ctx.Err() != nil:
		g.log.Warn(what+" not recorded in the ledger: interrupted", g.whereAttr()...)
	default:
		g.log.Warn(what+" not recorded in the ledger: it could not take the event (read-only, no right to write, or busy); "+
			"the "+what+" itself is complete", append(g.whereAttr(), "err", err)...)
	}
	return 0
}

// whereAttr names where the ledger is kept, for a log line: the
// database (without its password) with --database, else the root.
func (g *globals) whereAttr() []any {
	if g.database != "" {
		return []any{"database", ledger.RedactURL(g.database)}
	}
	return []any{"root", absPath(g.root)}
}

// absPath is p made absolute for a record.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// validActor refuses an --actor that no event could record, before the
// command does anything.
func validActor(actor string) error {
	return ledger.ValidateIdentity(ledger.Identity{Actor: actor})
}
