package ledger

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
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

// testHookHoldingJournalRead runs in CheckHolding between its two reads.
var testHookHoldingJournalRead func()

// ErrUnsettled: a write to the lock is under way on this host (a lock file
// placed for a decision not committed yet); read again shortly.
var ErrUnsettled = errors.New("a write to the lock is under way")

// CheckHolding reads, and only reads, whether the holding of lock that
// requestID took with token still stands: nil while it does, ErrUnsettled,
// or a *NotHolderError wrapping ErrLost whose EndedBy says who ended it.
func (l *Ledger) CheckHolding(ctx context.Context, lock, requestID string, token int64) error {
	q := l.store
	// The journal is read before the row: a write places its journal
	// before it commits and removes it after, so a journal gone by now
	// means the row read next is that write's. Read the other way round, a
	// steal committing in between leaves a row still naming this holder
	// and no journal to say a write was under way.
	j, jerr := l.files.ReadJournal(lock)
	if testHookHoldingJournalRead != nil {
		testHookHoldingJournalRead()
	}
	r, err := store.LoadRow(ctx, q, lock)
	if err == nil && r != nil && r.Held && r.RequestID == requestID && r.FencingToken == token {
		// A journal is left in place should its removal fail: it is under
		// way only while it holds what the row does not.
		if jerr == nil && j.Exists && !bytes.Equal(j.Data, r.File) {
			return ErrUnsettled
		}
		return jerr
	}
	shared, err2 := loadShared(ctx, q, lock)
	if err = cmp.Or(err, err2); err != nil {
		return err
	}
	for _, s := range shared {
		if s.rec.RequestID == requestID && s.token == token {
			return nil
		}
	}
	nh := &NotHolderError{Lock: lock, RequestID: requestID, Lost: true}
	if r != nil && r.Held {
		nh.Holder = &holdingFromRow(r).rec
	}
	nh.EndedBy, err = replay.EndOfHolding(ctx, q, lock, requestID, token)
	return cmp.Or(err, error(nh))
}
