package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// LastCheckpoint is the newest checkpoint the ledger stores, nil if none.
func LastCheckpoint(ctx context.Context, q store.Querier) (*Checkpoint, error) {
	size, created, err := store.LastCheckpoint(ctx, q)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: checkpoint: %w", err)
	}
	t, err := events.ParseTime(created)
	if err != nil {
		return nil, fmt.Errorf("metrics: checkpoint created_at %q: %w", created, err)
	}
	return &Checkpoint{Size: size, Created: t}, nil
}
