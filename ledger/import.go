package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
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
		k, err := copyRows(ctx, src, tx, table)
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
	if rep.HeadSeq, rep.HeadHash, err = head(ctx, tx, events.Genesis(from.id)); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger: import: commit: %w", err)
	}
	l.id, l.genesis = from.id, events.Genesis(from.id)
	return rep, nil
}

// copySQL is the read and the multi-row insert of one table's copy, and
// its number of columns.
func copySQL(table string) (read, insert string, n int) {
	switch table {
	case "events":
		return `SELECT seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash FROM events ORDER BY seq`,
			`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash) VALUES `, 10
	case "tlog_hashes":
		return `SELECT seq, hashes FROM tlog_hashes ORDER BY seq`, `INSERT INTO tlog_hashes (seq, hashes) VALUES `, 2
	case "checkpoints":
		return `SELECT id, size, root, note, key_name, created_at FROM checkpoints ORDER BY id`,
			`INSERT INTO checkpoints (id, size, root, note, key_name, created_at) VALUES `, 6
	case "lock_holders":
		return `SELECT ` + sharedColumns + ` FROM lock_holders ORDER BY lock_name, request_id`,
			`INSERT INTO lock_holders (` + sharedColumns + `) VALUES `, 16
	}
	return `SELECT ` + rowColumns + ` FROM locks ORDER BY lock_name`, `INSERT INTO locks (` + rowColumns + `) VALUES `, 18
}

// copyRows copies every row of table from src to dst in order,
// importBatch rows to an INSERT.
func copyRows(ctx context.Context, src, dst *sql.Tx, table string) (int64, error) {
	read, insert, n := copySQL(table)
	rows, err := src.QueryContext(ctx, read)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	// Group g of an INSERT binds $(g*n+1) to $(g*n+n).
	groups := make([]string, importBatch)
	marks := make([]string, n)
	for g := range groups {
		for i := range marks {
			marks[i] = "$" + strconv.Itoa(g*n+i+1)
		}
		groups[g] = "(" + strings.Join(marks, ",") + ")"
	}
	var total int64
	batch := make([]any, 0, importBatch*n)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		k := len(batch) / n
		if _, err := dst.ExecContext(ctx, insert+strings.Join(groups[:k], ","), batch...); err != nil {
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
