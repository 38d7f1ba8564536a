package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNotEmpty: the ledger to import into already holds events.
var ErrNotEmpty = errors.New("the ledger to import into already holds events")

// Copied counts the rows CopyLedger copied.
type Copied struct {
	Events, Checkpoints, Locks int64
}

// CopyLedger copies the whole ledger read through src into dst, which must
// hold no events, checkpoints or Merkle rows yet (ErrNotEmpty): the ledger's
// id and creation time (dst takes the source's identity: its chain
// continues the source's), every event byte for byte, the stored Merkle
// hashes, the checkpoints with their ids, and the locks and lock_holders
// tables. s is dst's store, which makes the copied ids take effect.
func CopyLedger(ctx context.Context, src, dst *sql.Tx, s Store, ledgerID string) (Copied, error) {
	var c Copied
	var n int64
	if err := dst.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM checkpoints) + (SELECT count(*) FROM tlog_hashes)`).Scan(&n); err != nil {
		return c, err
	}
	if n > 0 {
		return c, fmt.Errorf("%w (%d rows); import only into a new ledger", ErrNotEmpty, n)
	}
	if first, err := FirstSeq(ctx, src); err != nil {
		return c, err
	} else if first > 1 {
		return c, fmt.Errorf("%w (the live log starts at seq %d): import copies whole ledgers only", ErrPruned, first)
	}
	var created string
	if err := src.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'created_at'`).Scan(&created); err != nil {
		return c, fmt.Errorf("the source's created_at: %w", err)
	}
	for k, v := range map[string]string{"ledger_id": ledgerID, "created_at": created} {
		if _, err := dst.ExecContext(ctx, `UPDATE meta SET value = $1 WHERE key = $2`, v, k); err != nil {
			return c, err
		}
	}
	if _, err := dst.ExecContext(ctx, `DELETE FROM locks`); err != nil {
		return c, err
	}
	if _, err := dst.ExecContext(ctx, `DELETE FROM lock_holders`); err != nil {
		return c, err
	}
	for _, table := range []struct {
		name  string
		count *int64
	}{{"events", &c.Events}, {"tlog_hashes", nil}, {"checkpoints", &c.Checkpoints}, {"locks", &c.Locks}, {"lock_holders", nil}} {
		k, err := CopyTable(ctx, src, dst, table.name)
		if err != nil {
			return c, fmt.Errorf("%s: %w", table.name, err)
		}
		if table.count != nil {
			*table.count = k
		}
	}
	return c, s.FollowCopiedIDs(ctx, dst)
}

// copyBatch is the number of rows one INSERT of CopyTable carries.
const copyBatch = 200

// copySQL is the read and the multi-row insert of one table's copy, and
// its number of columns.
func copySQL(table string) (read, insert string, n int) {
	t := copied[table]
	return "SELECT " + t.cols + " FROM " + table + " ORDER BY " + t.order, "INSERT INTO " + table + " (" + t.cols + ") VALUES ",
		strings.Count(t.cols, ",") + 1
}

// copied are the columns of each table an import copies, and their order.
var copied = map[string]struct{ cols, order string }{
	"events":       {"seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash", "seq"},
	"tlog_hashes":  {"seq, hashes", "seq"},
	"checkpoints":  {"id, size, root, note, key_name, created_at", "id"},
	"lock_holders": {HolderColumns, "lock_name, request_id"},
	"locks":        {LockColumns, "lock_name"},
}

// CopyTable copies every row of table (events, tlog_hashes, checkpoints,
// lock_holders, or locks) from src to dst in order, copyBatch rows to an
// INSERT, and returns the number of rows copied.
func CopyTable(ctx context.Context, src, dst *sql.Tx, table string) (int64, error) {
	read, insert, n := copySQL(table)
	rows, err := src.QueryContext(ctx, read)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	// Group g of an INSERT binds $(g*n+1) to $(g*n+n).
	groups := make([]string, copyBatch)
	marks := make([]string, n)
	for g := range groups {
		for i := range marks {
			marks[i] = "$" + strconv.Itoa(g*n+i+1)
		}
		groups[g] = "(" + strings.Join(marks, ",") + ")"
	}
	var total int64
	batch := make([]any, 0, copyBatch*n)
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
		if len(batch) == copyBatch*n {
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
