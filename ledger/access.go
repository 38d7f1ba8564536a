package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/events"
)

// RecordAccess appends a ledger-wide event that records a read of the
// whole audit log: ledger_exported (export) or ledger_verified (verify).
// It takes the writer mutex and a transaction of its own, as any write
// does, and changes no lock. Call it after the read it records, from a
// separate snapshot, so that it never changes what the read saw (a
// verify's report is of the log before this event). It returns the seq of
// the event; ErrReadOnly on a ledger opened ReadOnly, and the writer
// mutex's busy error when writers hold it past the busy timeout.
func (l *Ledger) RecordAccess(ctx context.Context, typ events.Type, id Identity, payload any) (int64, error) {
	if typ != events.LedgerExported && typ != events.LedgerVerified {
		return 0, fmt.Errorf("ledger: RecordAccess(%s): only %s and %s record a read of the log", typ,
			events.LedgerExported, events.LedgerVerified)
	}
	seq, cp, err := l.recordAccess(ctx, typ, id, payload)
	l.publishQuietly(ctx, cp)
	return seq, err
}

// recordAccess appends under the writer mutex, with the checkpoint due
// then, like any other write; publishing waits for the mutex to be let go.
func (l *Ledger) recordAccess(ctx context.Context, typ events.Type, id Identity, payload any) (int64, *Checkpointed, error) {
	unlock, err := l.lockWriter(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer unlock()
	tx, now, err := l.beginWrite(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer tx.Rollback()
	if id, err = l.resolve(id, now); err != nil {
		return 0, nil, err
	}
	// A view of no lock: the event's lock_name is left out.
	w := &writeTx{l: l, ctx: ctx, tx: tx, q: preparedTx{l: l, tx: tx}, now: now, v: &view{}}
	ev, err := w.append(typ, id, payload)
	if err != nil {
		return 0, nil, err
	}
	cp, err := l.dueCheckpoint(ctx, w.q, w.seq, w.now)
	if err != nil {
		l.log.Warn("could not sign a checkpoint", "seq", w.seq, "err", err)
		cp = nil
	}
	if err := tx.Commit(); err != nil {
		return 0, nil, fmt.Errorf("ledger: commit: %w", err)
	}
	return ev.Seq, cp, nil
}

// ValidateIdentity checks id by the rules every operation applies to who
// acts (request id, actor, pid), so that a command can refuse bad input
// (ErrInvalid) before it does anything.
func ValidateIdentity(id Identity) error {
	_, err := (*Ledger)(nil).resolve(id, time.Now())
	return err
}
