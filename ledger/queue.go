package ledger

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/store"
)

// A lock's queue is read from the log, like every other state: a waiter
// joins it with its first blocked attempt (acquire_blocked with until, its
// wait's end) and is served in the order of those events. It leaves by its
// request's next lock_acquired, lock_stolen or acquire_blocked on the lock
// (it got the lock, or gave up: its wait ran out, it was cancelled, or it
// met a stale lock), when its until passes, or when its process is provably
// gone (the same rule as a holder's, gone in state.go; a waiter on another
// machine leaves by its until). Only exclusive acquisitions queue and are
// held back by the queue; shared ones, steals, --force on a stale lock and
// --reclaim ignore it.

// QueueHorizon is how far back the log is read for a queue: a waiter
// queued longer ago than this has lost its place, and joins again at the
// back with its next attempt.
const QueueHorizon = 24 * time.Hour

// Waiter is one request in a lock's queue.
type Waiter struct {
	Position  int // 1 is served next
	Lock      string
	RequestID string
	Actor     string
	HostID    string
	PID       int
	Seq       int64     // the acquire_blocked event it queued with
	Since     time.Time // when it queued
	Until     time.Time // when its wait ends
	pidStart  string
	bootID    string
}

// queuedBody is what a queue reads of an acquire_blocked event's body.
type queuedBody struct {
	HostID   string `json:"host_id"`
	PID      int    `json:"pid"`
	Until    string `json:"until"`
	PIDStart string `json:"pid_start"`
	BootID   string `json:"boot_id"`
}

// queues reads the queues at now: lock's, or every lock's when lock is "",
// by lock name, each in arrival order.
func (l *Ledger) queues(ctx context.Context, q store.Querier, lock string, now time.Time) (map[string][]Waiter, error) {
	rows, err := store.LoadQueued(ctx, q, lock, events.FormatTime(now.Add(-QueueHorizon)))
	if err != nil {
		return nil, err
	}
	out := map[string][]Waiter{}
	for _, r := range rows {
		var b queuedBody
		if json.Unmarshal(r.Body, &b) != nil || b.Until == "" {
			continue // gave up, or never queued
		}
		until, err1 := events.ParseTime(b.Until)
		since, err2 := events.ParseTime(r.At)
		if err1 != nil || err2 != nil || !now.Before(until) {
			continue
		}
		wt := Waiter{Lock: r.Lock, RequestID: r.RequestID, Actor: r.Actor, HostID: b.HostID, PID: b.PID, Seq: r.Seq,
			Since: since, Until: until, pidStart: b.PIDStart, bootID: b.BootID}
		h := &holding{rec: events.Record{RequestID: r.RequestID, HostID: b.HostID, PID: b.PID},
			pidStart: b.PIDStart, bootID: b.BootID, heartbeat: since}
		if dead, _ := gone(h, l.host, l.probe); dead {
			continue
		}
		wt.Position = len(out[r.Lock]) + 1
		out[r.Lock] = append(out[r.Lock], wt)
	}
	return out, nil
}

// Queue returns lock's queue now, in arrival order. It takes no lock and
// changes nothing.
func (l *Ledger) Queue(ctx context.Context, lock string) ([]Waiter, error) {
	if err := events.ValidateLockName(lock); err != nil {
		return nil, err
	}
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil, err
	}
	qs, err := l.queues(ctx, l.store.DB(), lock, now)
	return qs[lock], err
}

// queueable reports whether req's blocked attempt puts it in the queue: an
// exclusive acquisition that waits.
func (r AcquireRequest) queueable() bool {
	return r.Waiting && r.WaitLeft > 0 && !r.isShared() && !r.RecordBlocked
}

// ahead splits a queue at req: the waiters ahead of it, and whether it is
// in the queue at all.
func ahead(queue []Waiter, requestID string) ([]Waiter, bool) {
	for i, wt := range queue {
		if wt.RequestID == requestID {
			return queue[:i], true
		}
	}
	return queue, false
}

// queuedAhead refuses a lock that is free, or whose holder is dead, to req
// while waiters queued before it are still waiting: it is held by the
// queue. A waiter not yet in the queue joins it (recorded once); a caller
// giving up records acquire_blocked as for a held lock. Steals and shared
// acquisitions are not held back.
func (w *writeTx) queuedAhead(req AcquireRequest, p takeover) (outcome error, refused bool, err error) {
	if p.steal != nil || req.isShared() {
		return nil, false, nil
	}
	qs, err := w.l.queues(w.ctx, w.q, req.Lock, w.now)
	if err != nil {
		return nil, false, err
	}
	first, in := ahead(qs[req.Lock], req.RequestID)
	if len(first) == 0 {
		return nil, false, nil
	}
	held := &HeldError{Lock: req.Lock, Waited: req.Waited, Queue: first}
	if !req.RecordBlocked && (in || !req.queueable()) {
		return held, true, nil
	}
	pl := &events.Blocked{State: events.StateHeld, WaitedSeconds: seconds(req.Waited), Mode: req.mode(), Limit: req.Limit,
		Reason: events.BlockedByQueue}
	if req.queueable() {
		w.queueFields(req, pl)
	}
	if _, err := w.append(events.AcquireBlocked, req.Identity, pl); err != nil {
		return nil, false, err
	}
	return held, true, nil
}

// joinsQueue reports whether req's attempt, refused by a holder, puts it
// in the queue: it queues, and is not there yet.
func (w *writeTx) joinsQueue(req AcquireRequest) (bool, error) {
	if !req.queueable() {
		return false, nil
	}
	qs, err := w.l.queues(w.ctx, w.q, req.Lock, w.now)
	if err != nil {
		return false, err
	}
	_, in := ahead(qs[req.Lock], req.RequestID)
	return !in, nil
}

// queueFields fills in what a queue needs of a waiter's acquire_blocked:
// when its wait ends, and what tells its process from a later one.
func (w *writeTx) queueFields(req AcquireRequest, p *events.Blocked) {
	p.Until = events.FormatTime(w.now.Add(req.WaitLeft))
	if !req.NoProcess {
		_, p.PIDStart = w.l.probe.Probe(req.PID)
		p.BootID = w.l.host.BootID
	}
}

// peekQueued answers a queued waiter's attempt at a lock that is free (or
// whose holder is dead) while others are ahead of it, without the writer
// mutex (see PeekHeld). nil: not sure.
func (l *Ledger) peekQueued(ctx context.Context, req AcquireRequest, now time.Time) *HeldError {
	if req.isShared() {
		return nil
	}
	qs, err := l.queues(ctx, l.store.DB(), req.Lock, now)
	if err != nil {
		return nil
	}
	first, in := ahead(qs[req.Lock], req.RequestID)
	if !in || len(first) == 0 {
		return nil
	}
	return &HeldError{Lock: req.Lock, Queue: first}
}

// queueMessage is HeldError's text for a lock held by its queue.
func queueMessage(e *HeldError) string {
	h := e.Queue[0]
	return termtext.Sprintf("lock %s: free, but %d waiter(s) queued first, the next request %s (actor %s, pid %d on %s, queued at %s)",
		e.Lock, len(e.Queue), h.RequestID, h.Actor, h.PID, h.HostID, events.FormatTime(h.Since))
}
