package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
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
	return l.appendWide(ctx, typ, id, func(store.PreparedTx, int64) (any, error) { return payload, nil })
}

// Prune removes events from the live store and records it, in one write:
// plan reads the live log in the write transaction (next is the seq its
// marker gets) and returns the ledger_pruned marker once the archive it
// checked verified against the log, or an error that changes nothing.
// The events from the marker's FirstSeq to its LastSeq are deleted
// (store.PruneEvents, the triggers allowing it only until the marker is
// appended), and the marker appended. The write stores a checkpoint of
// the log through the marker, signed with the ledger's key: a Ledger
// opened without one (WithSigner) is refused, ErrNoSigner, and so is a
// log whose tree does not extend what the signer signed before. It
// returns the marker's seq.
func (l *Ledger) Prune(ctx context.Context, id Identity, archiveSHA256 string,
	plan func(ctx context.Context, q store.Querier, next int64) (*events.Pruned, error)) (int64, error) {
	if l.signing.signer == nil {
		return 0, fmt.Errorf("ledger: prune: %w: a prune removes events only with a signature verify can check", ErrNoSigner)
	}
	return l.appendSigned(ctx, events.LedgerPruned, id, func(q store.PreparedTx, next int64) (any, error) {
		p, err := plan(ctx, q, next)
		if err == nil {
			_, err = store.PruneEvents(ctx, q, p.LastSeq+1, next, archiveSHA256)
		}
		return p, err
	})
}

// Unprune appends ledger_unpruned in the write in which restore puts the
// last prune's events back (archive.Restore), signed as a prune's is; it
// returns the marker's seq.
func (l *Ledger) Unprune(ctx context.Context, id Identity,
	restore func(ctx context.Context, q store.PreparedTx, next int64) (*events.Pruned, error)) (int64, error) {
	if l.signing.signer == nil {
		return 0, fmt.Errorf("ledger: unprune: %w: an unprune rewrites the live log only with a signature verify can check", ErrNoSigner)
	}
	return l.appendSigned(ctx, events.LedgerUnpruned, id, func(q store.PreparedTx, next int64) (any, error) { return restore(ctx, q, next) })
}

// appendWide appends one ledger-wide event, whose payload before gives
// (and may write first) in the event's own transaction.
func (l *Ledger) appendWide(ctx context.Context, typ events.Type, id Identity,
	before func(q store.PreparedTx, next int64) (any, error)) (int64, error) {
	return l.appendEvent(ctx, typ, id, false, before)
}

// appendSigned is appendWide in a write that stores a signed checkpoint
// of the log through the event, or fails.
func (l *Ledger) appendSigned(ctx context.Context, typ events.Type, id Identity,
	before func(q store.PreparedTx, next int64) (any, error)) (int64, error) {
	return l.appendEvent(ctx, typ, id, true, before)
}

func (l *Ledger) appendEvent(ctx context.Context, typ events.Type, id Identity, sign bool,
	before func(q store.PreparedTx, next int64) (any, error)) (int64, error) {
	var seq int64
	err := l.update(ctx, func(w *writeTx) (error, error) {
		w.mustSign = sign
		id, err := l.resolve(id, w.now)
		if err != nil {
			return nil, err
		}
		next, err := w.nextSeq()
		if err != nil {
			return nil, err
		}
		payload, err := before(w.q, next)
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
