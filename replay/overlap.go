package replay

import (
	"context"
	"fmt"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// Overlap is an acquisition that the ledger recorded while a different
// request still held the same lock: an instant with two holders, which the
// lock exists to rule out. A lock_stolen is a handover by definition (the
// previous holder loses the lock at that seq) and is never an overlap.
type Overlap struct {
	Lock string `json:"lock_name"`
	// Seq, At and RequestID are the lock_acquired event of the second holder.
	Seq       int64  `json:"seq"`
	At        string `json:"at"`
	RequestID string `json:"request_id"`
	// HolderSeq, HolderAt and HolderRequestID are the event that had given
	// the lock to the holder who still held it (lock_acquired or
	// lock_stolen), with no release of that holder since.
	HolderSeq       int64  `json:"holder_seq"`
	HolderAt        string `json:"holder_at"`
	HolderRequestID string `json:"holder_request_id"`
}

func (o Overlap) String() string {
	return fmt.Sprintf("lock %s: seq %d gave it to request %s while request %s still held it (since seq %d, %s)",
		o.Lock, o.Seq, o.RequestID, o.HolderRequestID, o.HolderSeq, o.HolderAt)
}

// Overlaps reads the event log, and only the event log, and reports every
// acquisition that happened while the ledger still had a different holder
// of the same lock that was neither stolen from nor released (the rules are
// State's claims; verify reports the same findings as kind overlap).
//
// A body that does not decode stops the fold with an error naming its seq:
// verify's chain and schema checks say what happened to it.
//
// q is any query runner: a read-only transaction sees one snapshot.
func Overlaps(ctx context.Context, q Querier) ([]Overlap, error) {
	st := NewState()
	st.keepOverlaps = true
	f := Filter{Types: []events.Type{events.LockAcquired, events.LockStolen, events.LockReleased}}
	for r, err := range store.Events(ctx, q, f) {
		if err != nil {
			return nil, fmt.Errorf("replay: overlaps: %w", err)
		}
		ev, err := DecodeEvent(r.Seq, r.Body)
		if err != nil {
			return nil, err
		}
		st.Apply(ev)
	}
	return st.overlaps, nil
}
