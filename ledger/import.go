package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/lockledger/lockledger/events"
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

// importBatch is the number of rows one INSERT carries.
const importBatch = 200

// Import copies the whole of ledger from into l, which holds no events
// yet: its id and creation time, every event byte for byte (so every hash
// stays), the stored Merkle hashes, the signed checkpoints, and the locks
// and lock_holders tables. l takes from's identity: its chain continues from's. from's
// writer mutex is held throughout, so that nothing is appended to it
// meanwhile; writers must then be pointed at l. Verify l afterwards.
func (l *Ledger) Import(ctx context.Context, from *Ledger) (*ImportReport, error) {
	unlockFrom, err := from.lockWriter(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: import: the source's writer mutex: %w", err)
	}
	defer unlockFrom()
	src, err := from.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer src.Rollback()
	unlock, err := l.lockWriter(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
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
		if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = ?`, v, k); err != nil {
			return nil, err
		}
	}
	copies := []struct {
		table, cols string
		n           int
		count       *int64
	}{
		{"events", "seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash", 10, &rep.Events},
		{"tlog_hashes", "seq, hashes", 2, nil},
		{"checkpoints", "id, size, root, note, key_name, created_at", 6, &rep.Checkpoints},
		{"locks", rowColumns, 18, &rep.Locks},
		{"lock_holders", sharedColumns, 16, nil},
	}
	for _, c := range copies {
		if c.table == "locks" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM locks`); err != nil {
				return nil, err
			}
		}
		if c.table == "lock_holders" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM lock_holders`); err != nil {
				return nil, err
			}
		}
		k, err := copyRows(ctx, src, tx, c.table, c.cols, c.n)
		if err != nil {
			return nil, fmt.Errorf("ledger: import %s: %w", c.table, err)
		}
		if c.count != nil {
			*c.count = k
		}
	}
	if l.store.shared() {
		// Checkpoint ids were copied: the next one follows them.
		if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('checkpoints', 'id'), coalesce((SELECT max(id) FROM checkpoints), 0) + 1, false)`); err != nil {
			return nil, err
		}
	}
	if rep.HeadSeq, rep.HeadHash, err = head(ctx, tx, events.Genesis(from.id)); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger: import: commit: %w", err)
	}
	l.id, l.genesis = from.id, events.Genesis(from.id)
	return rep, nil
}

// copyRows copies every row of table from src to dst in the order of its
// first column, importBatch rows to an INSERT.
func copyRows(ctx context.Context, src, dst *sql.Tx, table, cols string, n int) (int64, error) {
	first, _, _ := strings.Cut(cols, ",")
	rows, err := src.QueryContext(ctx, `SELECT `+cols+` FROM `+table+` ORDER BY `+first)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var total int64
	batch := make([]any, 0, importBatch*n)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		one := "(" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")"
		k := len(batch) / n
		q := `INSERT INTO ` + table + ` (` + cols + `) VALUES ` + strings.TrimSuffix(strings.Repeat(one+",", k), ",")
		if _, err := dst.ExecContext(ctx, q, batch...); err != nil {
			return err
		}
		total += int64(k)
		batch = batch[:0]
		return nil
	}
	for rows.Next() {
		vals := make([]any, n)
		ptrs := make([]any, n)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return 0, err
		}
		batch = append(batch, vals...)
		if len(batch) == importBatch*n {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return total, flush()
}
