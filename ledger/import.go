package ledger

import (
	"context"
	"fmt"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// ErrNotEmpty: the ledger to import into already holds events.
var ErrNotEmpty = store.ErrNotEmpty

// ImportReport is what Import moved.
type ImportReport struct {
	LedgerID    string `json:"ledger_id"`
	Events      int64  `json:"events"`
	Checkpoints int64  `json:"checkpoints"`
	Locks       int64  `json:"locks"`
	HeadSeq     int64  `json:"head_seq"`
	HeadHash    string `json:"head_hash"`
}

// Import copies the whole of ledger from into l, which holds no events
// yet: its id and creation time, every event byte for byte (so every hash
// stays), the stored Merkle hashes, the signed checkpoints, and the locks
// and lock_holders tables. l takes from's identity: its chain continues from's. from's
// writer mutex is held throughout, so that nothing is appended to it
// meanwhile; writers must then be pointed at l. Verify l afterwards.
// With a signer, a log that does not extend what it signed of ledger
// from before is refused (a *checkpoint.NotExtendedError), nothing copied.
func (l *Ledger) Import(ctx context.Context, from *Ledger) (*ImportReport, error) {
	if l.readOnly {
		return nil, fmt.Errorf("ledger %s: import: %w", l.where(), ErrReadOnly)
	}
	unlockFrom, err := from.lockWriter(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: import: the source's writer mutex: %w", err)
	}
	defer unlockFrom()
	src, err := from.store.BeginRead(ctx)
	if err != nil {
		return nil, err
	}
	defer src.Rollback()
	if l.root == from.root {
		// One root: from's writer mutex is this root's too (flock would
		// refuse it to a second descriptor of the same process).
		l.mu.Lock()
		defer l.mu.Unlock()
	} else {
		unlock, err := l.lockWriter(ctx)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	tx, err := l.beginWrite(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	copied, err := store.CopyLedger(ctx, src, tx, l.store, from.id)
	if err != nil {
		return nil, fmt.Errorf("ledger: import into %s: %w", l.where(), err)
	}
	rep := &ImportReport{LedgerID: from.id, Events: copied.Events, Checkpoints: copied.Checkpoints, Locks: copied.Locks}
	if rep.HeadSeq, rep.HeadHash, err = store.Head(ctx, tx, events.Genesis(from.id)); err != nil {
		return nil, err
	}
	if l.signing.signer != nil && rep.HeadSeq > 0 {
		if _, err := l.extendingTree(ctx, tx, from.id, rep.HeadSeq); err != nil {
			return nil, fmt.Errorf("ledger: import into %s: %w", l.where(), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger: import: commit: %w", err)
	}
	l.id, l.genesis = from.id, events.Genesis(from.id)
	// The trust store pins the ledger imported, never the empty one it
	// replaced (which would refuse every later write at the root).
	if l.trust != nil {
		if err := l.checkTrust(store.PinCheck); err != nil {
			return rep, fmt.Errorf("ledger: import into %s: %w", l.where(), err)
		}
	}
	return rep, nil
}
