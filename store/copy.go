package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// copyBatch is the number of rows one INSERT of CopyTable carries.
const copyBatch = 200

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
		return `SELECT ` + HolderColumns + ` FROM lock_holders ORDER BY lock_name, request_id`,
			`INSERT INTO lock_holders (` + HolderColumns + `) VALUES `, 16
	}
	return `SELECT ` + RowColumns + ` FROM locks ORDER BY lock_name`, `INSERT INTO locks (` + RowColumns + `) VALUES `, 18
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
