package ledger

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/archive"
	"github.com/lockledger/lockledger/checkpoint"
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
//
// A verify that failed (an *events.Verified whose Result is
// events.AuditFailed) is recorded unsigned: no checkpoint is stored and no
// head kept for the write, so that the record of the damage never signs
// over the damaged log, nor moves the head that shows the damage.
func (l *Ledger) RecordAccess(ctx context.Context, typ events.Type, id Identity, payload any) (int64, error) {
	if typ != events.LedgerExported && typ != events.LedgerVerified {
		return 0, fmt.Errorf("ledger: RecordAccess(%s): only %s and %s record a read of the log", typ,
			events.LedgerExported, events.LedgerVerified)
	}
	rule := signDue
	if v, ok := payload.(*events.Verified); ok && v.Result != events.AuditOK {
		rule = signNever
	}
	return l.appendEvent(ctx, typ, id, rule, func(store.PreparedTx, int64) (any, error) { return payload, nil })
}

// Prune removes events from the live store into the archive a, checked
// on its own (archive.Read), and records it, in one write: in the write
// transaction (next is the seq its marker gets) the archive must verify
// against the live log (archive.Plan; file is its absolute path, for the
// marker). Where a signed head covers the events it removes (the head this
// user keeps of the ledger, WithHeads, or a witness's cosignature the
// ledger holds), the archive must also be in the log that head signed and
// still be at its path, unchanged, right before the delete: otherwise the
// prune is refused, an *archive.CoveredError naming the head. The events
// from the marker's FirstSeq to its LastSeq are deleted
// (store.PruneEvents, the triggers allowing it only until the marker is
// appended), and the marker appended. The write stores a checkpoint of
// the log through the marker, signed with the ledger's key: a Ledger
// opened without one (WithSigner) is refused, ErrNoSigner, and so is a
// log whose tree does not extend what the signer signed before. It
// returns the marker's seq.
func (l *Ledger) Prune(ctx context.Context, id Identity, a *archive.Checked, file string) (int64, error) {
	if l.signing.signer == nil {
		return 0, fmt.Errorf("ledger: prune: %w: a prune removes events only with a signature verify can check", ErrNoSigner)
	}
	return l.appendEvent(ctx, events.LedgerPruned, id, signMust, func(q store.PreparedTx, next int64) (any, error) {
		p, err := archive.Plan(a, l.id, file)(ctx, q, next)
		if err == nil {
			err = l.coveredKept(ctx, q, a)
		}
		if err == nil {
			_, err = store.PruneEvents(ctx, q, p.LastSeq+1, next, a.SHA256)
		}
		return p, err
	})
}

// coveredKept checks the archive a against every signed head that covers
// any of its events: the head kept for this ledger at this root, and each
// witness cosignature the ledger holds; then, when one does, that the
// archive file is still kept. A head covers the archive's events when its
// size reaches the archive's first seq.
func (l *Ledger) coveredKept(ctx context.Context, q store.Querier, a *archive.Checked) error {
	type head struct {
		by   string
		size int64
		root tlog.Hash
	}
	var heads []head
	if s, err := l.heads().Last(l.id, checkpoint.VerifierOf(l.signing.signer)); err != nil {
		return err
	} else if s != nil {
		heads = append(heads, head{"the head kept in " + l.heads().Kept(l.id), s.Size, s.Root})
	}
	cs, err := store.StoredCosignatures(ctx, q)
	if err != nil {
		return err
	}
	for _, c := range cs {
		// The ledger holds what its witnesses returned; one that is not a
		// checkpoint of this ledger vouches for nothing here.
		s, err := checkpoint.Open(c.Note)
		if err != nil || s.LedgerID() != l.id {
			continue
		}
		heads = append(heads, head{fmt.Sprintf("witness %s's cosignature (row %d)", c.Witness, c.ID), s.Size, s.Root})
	}
	var first *head // the first head that covers the archive's events
	for _, h := range heads {
		if h.size < a.FirstSeq {
			continue
		}
		if first == nil {
			first = &h
		}
		if err := a.InLogOf(ctx, q, h.size, h.root); err != nil {
			return &archive.CoveredError{By: h.by, Size: h.size, Err: err}
		}
	}
	if first == nil {
		return nil
	}
	if err := a.Kept(); err != nil {
		return &archive.CoveredError{By: first.by, Size: first.size, Err: err}
	}
	return nil
}

// Unprune appends ledger_unpruned in the write in which restore puts the
// last prune's events back (archive.Restore), signed as a prune's is; it
// returns the marker's seq.
func (l *Ledger) Unprune(ctx context.Context, id Identity,
	restore func(ctx context.Context, q store.PreparedTx, next int64) (*events.Pruned, error)) (int64, error) {
	if l.signing.signer == nil {
		return 0, fmt.Errorf("ledger: unprune: %w: an unprune rewrites the live log only with a signature verify can check", ErrNoSigner)
	}
	return l.appendEvent(ctx, events.LedgerUnpruned, id, signMust, func(q store.PreparedTx, next int64) (any, error) { return restore(ctx, q, next) })
}

// signRule is what a ledger-wide event's write signs.
type signRule int

const (
	signDue   signRule = iota // the checkpoint (or head) the policy says is due, as any write
	signMust                  // a checkpoint through the event, or the write fails
	signNever                 // nothing: the log is damaged, and no checkpoint or kept head may vouch for it
)

// appendEvent appends one ledger-wide event, whose payload before gives
// (and may write first) in the event's own transaction, in a write that
// signs by rule.
func (l *Ledger) appendEvent(ctx context.Context, typ events.Type, id Identity, rule signRule,
	before func(q store.PreparedTx, next int64) (any, error)) (int64, error) {
	var seq int64
	err := l.update(ctx, func(w *writeTx) (error, error) {
		w.mustSign, w.unsigned = rule == signMust, rule == signNever
		id, err := l.resolve(id, w.now)
		if err != nil {
			return nil, err
		}
		next, err := w.nextSeq()
		if err != nil {
			return nil, err
		}
		if rule == signNever && l.signing.signer != nil {
			// Nothing is signed, so no signing proves that the log extends
			// what this signer signed before: proven here, so that a record
			// of a failed verify on an older copy put back (a whole-root
			// restore, its pin with it) is not appended to it, where it
			// would turn that older state into another history.
			if _, err := l.extendingTree(ctx, w.q, l.id, next-1); err != nil {
				return nil, fmt.Errorf("ledger: %w", err)
			}
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
