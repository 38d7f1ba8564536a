package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// ErrNotEmpty: the ledger to import into already holds events.
var ErrNotEmpty = errors.New("the ledger to import into already holds events")

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
func (l *Ledger) Import(ctx context.Context, from *Ledger) (*ImportReport, error) {
	if l.readOnly {
		return nil, fmt.Errorf("ledger %s: import: %w", l.where(), ErrReadOnly)
	}
	unlockFrom, err := from.lockWriter(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: import: the source's writer mutex: %w", err)
	}
	defer unlockFrom()
	src, err := from.store.DB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
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
	tx, _, err := l.beginWrite(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM checkpoints) + (SELECT count(*) FROM tlog_hashes)`).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, fmt.Errorf("ledger: import into %s: %w (%d rows); import only into a new ledger", l.where(), ErrNotEmpty, n)
	}
	rep := &ImportReport{LedgerID: from.id}
	var created string
	if err := src.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'created_at'`).Scan(&created); err != nil {
		return nil, fmt.Errorf("ledger: import: the source's created_at: %w", err)
	}
	for k, v := range map[string]string{"ledger_id": from.id, "created_at": created} {
		if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = $1 WHERE key = $2`, v, k); err != nil {
			return nil, err
		}
	}
	for _, table := range []string{"events", "tlog_hashes", "checkpoints", "locks", "lock_holders"} {
		switch table {
		case "locks":
			if _, err := tx.ExecContext(ctx, `DELETE FROM locks`); err != nil {
				return nil, err
			}
		case "lock_holders":
			if _, err := tx.ExecContext(ctx, `DELETE FROM lock_holders`); err != nil {
				return nil, err
			}
		}
		k, err := store.CopyTable(ctx, src, tx, table)
		if err != nil {
			return nil, fmt.Errorf("ledger: import %s: %w", table, err)
		}
		switch table {
		case "events":
			rep.Events = k
		case "checkpoints":
			rep.Checkpoints = k
		case "locks":
			rep.Locks = k
		}
	}
	if l.store.ManyHosts() {
		// Checkpoint ids were copied: the next one follows them.
		if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('checkpoints', 'id'), coalesce((SELECT max(id) FROM checkpoints), 0) + 1, false)`); err != nil {
			return nil, err
		}
	}
	if rep.HeadSeq, rep.HeadHash, err = store.Head(ctx, tx, events.Genesis(from.id)); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger: import: commit: %w", err)
	}
	l.id, l.genesis = from.id, events.Genesis(from.id)
	return rep, nil
}
