package ledger

import (
	"context"
	"time"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/store"
)

// ownCheckpoint reports whether the last checkpoint row, of size size, is
// one this writer's key signed of this ledger, covering no more than the
// seq events the log holds, and when it was signed. Anyone who can write
// the database can add a row: one the key did not sign (garbage, a huge
// size, another key's) vouches for nothing, so a checkpoint is due.
func (l *Ledger) ownCheckpoint(ctx context.Context, q store.PreparedTx, size, seq int64) (time.Time, bool, error) {
	if size < 1 || size > seq {
		return time.Time{}, false, nil
	}
	rows, err := store.StoredCheckpoints(ctx, q, size, size)
	if err != nil || len(rows) == 0 {
		return time.Time{}, false, err
	}
	t, ok := checkpoint.SignedBy(rows[len(rows)-1].Note, l.signing.signer, checkpoint.Origin(l.id), size)
	return t, ok, nil
}
