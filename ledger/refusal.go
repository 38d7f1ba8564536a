package ledger

import (
	"context"
	"strings"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// pastHolding is what the events say a request did as a lock's holder,
// for a request that does not hold it now.
type pastHolding struct {
	held        bool  // it took the lock at some time
	releasedSeq int64 // it released the lock itself, at this seq, and has not held it since
}

// lost reports whether the request held the lock and had it taken away
// (stolen or superseded, displaced by another tool's lock file,
// force-released) rather than releasing it.
func (p pastHolding) lost() bool { return p.held && p.releasedSeq == 0 }

// pastHoldingOf reads requestID's events on lock, newest first, down to the
// last one that took, renewed or freed its own holding. A forced release
// of another request's lock is no part of the request's own holding; a
// forced release that names the request took the lock from it.
func pastHoldingOf(ctx context.Context, q store.Querier, lock, requestID string) (pastHolding, error) {
	var past pastHolding
	err := store.HoldingEvents(ctx, q, lock, requestID, func(seq int64, typ string, body []byte) (bool, error) {
		if events.Type(typ) != events.LockReleased {
			past = pastHolding{held: true}
			return false, nil
		}
		_, p, err := events.Decode(body)
		if err != nil {
			return false, err
		}
		rel, _ := p.(*events.Released)
		switch {
		case rel == nil || !rel.Forced:
			past = pastHolding{held: true, releasedSeq: seq}
			return false, nil
		case rel.ReleasedRequestID == requestID:
			past = pastHolding{held: true}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return pastHolding{}, err
	}
	return past, nil
}

// maxRefusalText bounds action_refused's error text (its schema's maxLength).
const maxRefusalText = 4096

// refuse records action_refused for a release, steal or heartbeat the
// ledger refuses, in the same decision, and returns refusal as its outcome:
// the event commits and the caller gets the error it records. h is the
// lock's holder at the time (nil when free).
func (w *writeTx) refuse(action string, id Identity, h *holding, refusal error) (error, error) {
	msg := refusal.Error()
	if len(msg) > maxRefusalText {
		msg = strings.ToValidUTF8(msg[:maxRefusalText], "")
	}
	p := &events.Refused{Action: action, Error: msg, State: events.StateFree}
	if h != nil {
		p.State, _ = judge(h, w.now, w.l.host, w.l.probe, 0)
		p.HeldBy, p.UnreadableFile = heldBy(h)
	}
	if _, err := w.append(events.ActionRefused, id, p); err != nil {
		return nil, err
	}
	return refusal, nil
}
