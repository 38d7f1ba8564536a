package replay

import (
	"context"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/store"
)

// PastHolding is what the events say a request did as a lock's holder,
// for a request that does not hold it now.
type PastHolding struct {
	Held        bool  // it took the lock at some time
	ReleasedSeq int64 // it released the lock itself, at this seq, and has not held it since
	// Actor and PID are the holding's, from its last event that took or
	// renewed it, when it was lost (Lost).
	Actor string
	PID   int
}

// Lost reports whether the request held the lock and had it taken away
// (stolen or superseded, displaced by another tool's lock file,
// force-released) rather than releasing it.
func (p PastHolding) Lost() bool { return p.Held && p.ReleasedSeq == 0 }

// PastHoldingOf reads requestID's events on lock that take, renew or free
// a holding (lock_acquired, lock_stolen, lock_heartbeat, lock_released),
// newest first, down to the last one that took, renewed or freed its own
// holding. A forced release of another request's lock is no part of the
// request's own holding; a forced release that names the request took the
// lock from it. Events a prune archived are not read: a request whose
// holding ended before the live log starts reads as one that never held.
func PastHoldingOf(ctx context.Context, q Querier, lock, requestID string) (PastHolding, error) {
	lost := false // a forced release named the request: it lost the lock
	for r, err := range store.HoldingEvents(ctx, q, lock, requestID) {
		if err != nil {
			return PastHolding{}, err
		}
		env, p, err := events.Decode(r.Body)
		if err != nil {
			return PastHolding{}, err
		}
		if events.Type(r.Type) != events.LockReleased {
			return PastHolding{Held: true, Actor: env.Actor, PID: env.PID}, nil
		}
		if lost {
			continue // down to the event that took or renewed what was taken
		}
		rel, _ := p.(*events.Released)
		switch {
		case rel == nil || !rel.Forced:
			return PastHolding{Held: true, ReleasedSeq: r.Seq}, nil
		case rel.ReleasedRequestID == requestID:
			lost = true
		}
	}
	return PastHolding{Held: lost}, nil
}

// HoldingEnd is the event that ended a holding: who ended it (the
// envelope: type, time, actor, uid and user, pid, host, request id) and
// why (a release's forced flag and note, a steal's reason and note).
type HoldingEnd struct {
	events.Envelope
	Forced bool   // lock_released by another than the holder
	Reason string // lock_stolen's reason (forced_active, stale_lock_forced, holder_dead, reclaimed, ...)
	Note   string // the operator's reason, "" when none was given
}

// EndOfHolding finds the event that ended the holding of lock that
// requestID took with fencing token (the seq of the event that took it):
// the first event after it that released that holding (lock_released of
// that token, by anyone) or took the lock from it (lock_stolen whose
// previous holder is requestID). nil when the log shows none (the holding
// stands, or token is 0: no holding named).
func EndOfHolding(ctx context.Context, q Querier, lock, requestID string, token int64) (*HoldingEnd, error) {
	if token <= 0 {
		return nil, nil
	}
	for r, err := range store.HoldingEnds(ctx, q, lock, token) {
		if err != nil {
			return nil, err
		}
		env, p, err := events.Decode(r.Body)
		if err != nil {
			return nil, err
		}
		switch p := p.(type) {
		case *events.Released:
			if p.FencingToken == token {
				return &HoldingEnd{Envelope: env, Forced: p.Forced, Note: p.Note}, nil
			}
		case *events.Stolen:
			if p.PreviousLock.RequestID == requestID {
				return &HoldingEnd{Envelope: env, Reason: p.Reason, Note: p.Note}, nil
			}
		}
	}
	return nil, nil
}

// String says who ended the holding and why: the event's type, seq and
// time, its actor, the OS user, pid and host of the process that wrote it,
// its request id, and the reason given.
func (e *HoldingEnd) String() string {
	what := string(e.Type)
	switch {
	case e.Forced:
		what += " (forced)"
	case e.Reason != "":
		what += " (" + e.Reason + ")"
	}
	user := ""
	if uid, name, ok := e.OSUser(); ok {
		user = termtext.Sprintf(", uid %d(%s)", uid, name)
	}
	s := termtext.Sprintf("ended by %s at seq %d, %s, by actor %s%s, pid %d on %s, request %s",
		what, e.Seq, e.At, e.Actor, user, e.PID, e.HostID, e.RequestID)
	if e.Note != "" {
		s += termtext.Sprintf(", reason %q", e.Note)
	}
	return s
}
