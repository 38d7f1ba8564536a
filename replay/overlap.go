package replay

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lockledger/lockledger/events"
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

// overlapRows is what Overlaps needs of a database: *sql.DB, *sql.Tx and
// *sql.Conn all have it.
type overlapRows interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// overlapHolding is one request that holds a lock as far as the fold knows.
type overlapHolding struct {
	requestID string
	token     int64
	seq       int64
	at        string
}

// Overlaps reads the event log, and only the event log, and reports every
// acquisition that happened while the ledger still had a different holder
// of the same lock that was neither stolen from nor released. It folds
// lock_acquired, lock_stolen and lock_released per lock in seq order:
//
//   - lock_acquired adds its request to the lock's holders; if another
//     request is among them, that is an Overlap (one per acquisition, naming
//     the earliest other holder);
//   - lock_stolen replaces every holder with its request (a handover);
//   - lock_released removes the holder it names: the releasing request, or
//     released_request_id when forced, or the holder whose fencing token it
//     carries. A release that names no holder (a foreign lock's, or a stray
//     one) frees nobody.
//
// A body that does not decode stops the fold with an error naming its seq:
// verify's chain and schema checks say what happened to it.
func Overlaps(ctx context.Context, db *sql.DB) ([]Overlap, error) { return OverlapsIn(ctx, db) }

// OverlapsIn is Overlaps on any query runner, e.g. the read-only
// transaction verify takes, so that it sees the same snapshot.
func OverlapsIn(ctx context.Context, q overlapRows) ([]Overlap, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, body FROM events
		WHERE type IN ('lock_acquired', 'lock_stolen', 'lock_released') ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("replay: overlaps: %w", err)
	}
	defer rows.Close()
	holders := map[string][]overlapHolding{}
	var out []Overlap
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return nil, fmt.Errorf("replay: overlaps: %w", err)
		}
		env, payload, err := events.Decode(body)
		if err != nil {
			return nil, fmt.Errorf("replay: overlaps: event seq %d does not decode (run verify): %w", seq, err)
		}
		lock := env.LockName
		switch p := payload.(type) {
		case *events.Acquired:
			cur := holders[lock]
			for _, h := range cur {
				if h.requestID != env.RequestID {
					out = append(out, Overlap{Lock: lock, Seq: seq, At: env.At, RequestID: env.RequestID,
						HolderSeq: h.seq, HolderAt: h.at, HolderRequestID: h.requestID})
					break
				}
			}
			if !overlapHas(cur, env.RequestID) {
				holders[lock] = append(cur, overlapHolding{requestID: env.RequestID, token: p.FencingToken, seq: seq, at: env.At})
			}
		case *events.Stolen:
			holders[lock] = []overlapHolding{{requestID: env.RequestID, token: p.FencingToken, seq: seq, at: env.At}}
		case *events.Released:
			released := env.RequestID
			if p.Forced && p.ReleasedRequestID != "" {
				released = p.ReleasedRequestID
			}
			cur := holders[lock]
			kept := cur[:0]
			for _, h := range cur {
				if h.requestID == released || (p.FencingToken != 0 && h.token == p.FencingToken) {
					continue
				}
				kept = append(kept, h)
			}
			if len(kept) == 0 {
				delete(holders, lock)
			} else {
				holders[lock] = kept
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("replay: overlaps: %w", err)
	}
	return out, nil
}

func overlapHas(hs []overlapHolding, requestID string) bool {
	for _, h := range hs {
		if h.requestID == requestID {
			return true
		}
	}
	return false
}
