package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// NewestCheckpoint is the stored checkpoint of the largest size at most
// maxSize (the last stored of that size); nil when there is none.
func NewestCheckpoint(ctx context.Context, q Querier, maxSize int64) (*StoredCheckpoint, error) {
	var c StoredCheckpoint
	var n string
	err := q.QueryRowContext(ctx, `SELECT id, size, note FROM checkpoints WHERE size <= $1 ORDER BY size DESC, id DESC LIMIT 1`, maxSize).
		Scan(&c.ID, &c.Size, &n)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("ledger: checkpoints: %w", err)
	}
	c.Note = []byte(n)
	return &c, nil
}
