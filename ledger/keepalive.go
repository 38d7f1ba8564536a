package ledger

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// What a holder that keeps its lock alive on its own (package lease) needs
// from the ledger beyond acquire and release.

// RenewRequest renews a holding, as Heartbeat does, for a holder that
// counts its failed heartbeats and knows its fencing token.
type RenewRequest struct {
	Lock string
	Identity
	// FencingToken, when non-zero, renews only the holding with that token:
	// a holder whose request id was reclaimed by another process has lost
	// its lock.
	FencingToken int64
	// PriorFailures counts the holder's failed attempts just before this
	// one; they are recorded if this one finds the lock lost.
	PriorFailures int
}

// Renew is Heartbeat with the fencing token and failure count of req.
func (l *Ledger) Renew(ctx context.Context, req RenewRequest) (*Acquisition, error) {
	return l.heartbeat(ctx, req.Lock, req.Identity, req.PriorFailures, req.FencingToken)
}

// Identity is who holds the lock a took: its request id, actor and pid.
func (a *Acquisition) Identity() Identity {
	return Identity{RequestID: a.RequestID, Actor: a.Record.Actor, PID: a.Record.PID}
}

// HeartbeatSent is a time on this process's clock, with its monotonic
// reading, no later than the send time of the call that stamped the lock's
// heartbeat time in a.Record: a TTL counted from it never ends after the
// ledger's. For a lock taken by the call it is the call's send time; for
// one the request already held (Already), nothing was renewed, so it is
// moved back by the heartbeat's age at the decision, measured on the clock
// that stamped it (the database's, on PostgreSQL).
func (a *Acquisition) HeartbeatSent() time.Time {
	if hb, err := a.Record.HeartbeatTime(); err == nil && !a.at.IsZero() && hb.Before(a.at) {
		return a.sent.Add(-a.at.Sub(hb))
	}
	return a.sent
}

// BusyTimeout is how long an operation waits for the database and the
// writer mutex before it fails with a transient error (WithBusyTimeout).
func (l *Ledger) BusyTimeout() time.Duration { return l.busy }

// Logger is the logger the ledger warns to (WithLogger).
func (l *Ledger) Logger() *slog.Logger { return l.log }

// ErrUnsettled: a read of a lock found a write to it under way on this
// host (a lock file placed for a decision not committed yet): read again
// shortly.
var ErrUnsettled = errors.New("a write to the lock is under way")

// CheckHolding reads, outside any write and without the writer mutex,
// whether the holding of lock that requestID took with token (its fencing
// token) still stands: nil while it does; a *NotHolderError wrapping
// ErrLost, whose EndedBy names who ended it, once the ledger shows that
// it ended (released by another, even under this request id, stolen, taken
// over); ErrUnsettled while a write to the lock is under way here; else
// the read's error. It records nothing and renews nothing, so that a holder
// may call it on every change of its lock (Watch), its own heartbeats
// included.
func (l *Ledger) CheckHolding(ctx context.Context, lock, requestID string, token int64) error {
	q := l.store.DB()
	r, err := store.LoadRow(ctx, q, lock)
	if err != nil {
		return err
	}
	if r != nil && r.Held && r.RequestID == requestID && r.FencingToken == token {
		v, err := l.inspect(lock, r)
		if err != nil {
			return err
		}
		if slices.Contains(v.repairs, repairDropJournal) {
			return ErrUnsettled
		}
		return nil
	}
	shared, err := loadShared(ctx, q, lock)
	if err != nil {
		return err
	}
	for _, s := range shared {
		if s.rec.RequestID == requestID && s.token == token {
			return nil
		}
	}
	end, err := replay.EndOfHolding(ctx, q, lock, requestID, token)
	if err != nil {
		return err
	}
	nh := &NotHolderError{Lock: lock, RequestID: requestID, Lost: true, EndedBy: end}
	if r != nil && r.Held {
		h := holdingFromRow(r)
		nh.Holder = &h.rec
	}
	return nh
}
