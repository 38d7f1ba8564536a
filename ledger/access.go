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
	var seq int64
	err := l.update(ctx, func(w *writeTx) (error, error) {
		id, err := l.resolve(id, w.now)
		if err != nil {
			return nil, err
		}
		// A view of no lock: the event's lock_name is left out.
		ev, err := w.append(typ, id, payload)
		if err != nil {
			return nil, err
		}
		seq = ev.Seq
		return nil, nil
	})
	return seq, err
}

// ValidateIdentity checks id by the rules every operation applies to who
// acts (request id, actor, pid), so that a command can refuse bad input
// (ErrInvalid) before it does anything.
func ValidateIdentity(id Identity) error {
	_, err := (*Ledger)(nil).resolve(id, time.Now())
	return err
}
