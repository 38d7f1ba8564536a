package ledger

import (
	"time"

	"github.com/lockledger/lockledger/checkpoint"
)

// ownCheckpoint reports whether note, the last checkpoint row, of size
// size, is one this writer's key signed of this ledger, covering no more
// than the seq events the log holds, and when it was signed. Anyone who
// can write the database can add a row: one the key did not sign
// (garbage, a huge size, another key's) vouches for nothing, so a
// checkpoint is due.
func (l *Ledger) ownCheckpoint(note []byte, size, seq int64) (time.Time, bool) {
	if size < 1 || size > seq {
		return time.Time{}, false
	}
	return checkpoint.SignedBy(note, l.signing.signer, checkpoint.Origin(l.id), size)
}
