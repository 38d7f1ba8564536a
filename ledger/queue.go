package ledger

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/store"
)

// A lock's queue is read from the log, like every other state. A waiter's
// place is a lease: it joins with an acquire_blocked carrying until (at
// most events.WaiterTTL ahead, and never past its wait's end) and keeps
// the place only by renewing it before then, with another such event that
// names the one it joined with (queued_seq, queued_at). Waiters are served
// in the order they joined. A waiter leaves by its request's next
// lock_acquired or lock_stolen on the lock, or an acquire_blocked without
// until (it gave up: its wait ran out, it was cancelled, or it met a stale
// lock), when its place is not renewed in time (its process died, on any
// host, or stopped), or at once when its process is provably gone from
// here (the same rule as a holder's, gone in state.go). A waiter whose
// place lapsed while it still waits joins again, at the back. Only
// exclusive acquisitions queue and are held back by the queue; shared
// ones, steals and --force on a stale lock ignore it.

// WaiterRenewEvery is how often a waiter renews its place (lease.Wait
// makes an attempt through TryAcquire at least this often): a third of
// events.WaiterTTL, so that a renewal delayed by a busy writer (up to
// the busy timeout) still lands in time.
const WaiterRenewEvery = events.WaiterTTL / 3

// waiterRenewAfter is how old a waiter's last record of its place must be
// for an attempt of the waiter to renew it: attempts made more often than
// this (a lock that keeps changing) record nothing more.
const waiterRenewAfter = events.WaiterTTL / 6

// Waiter is one request in a lock's queue.
type Waiter struct {
	Position  int // 1 is served next
	Lock      string
	RequestID string
	Actor     string
	HostID    string
	PID       int
	Seq       int64     // the acquire_blocked event it joined the queue with
	Since     time.Time // when it joined
	Until     time.Time // when its place lapses unless renewed
	Renewed   time.Time // its last record of its place (Since, or its last renewal)
	pidStart  string
	bootID    string
	pidNS     *int64
}

// queuedBody is what a queue reads of an acquire_blocked event's body.
type queuedBody struct {
	HostID    string `json:"host_id"`
	PID       int    `json:"pid"`
	Until     string `json:"until"`
	PIDStart  string `json:"pid_start"`
	BootID    string `json:"boot_id"`
	PIDNS     *int64 `json:"pid_ns"`
	QueuedSeq int64  `json:"queued_seq"`
	QueuedAt  string `json:"queued_at"`
}

// queues reads the queues at now: lock's, or every lock's when lock is "",
// by lock name, each in the order its waiters joined.
func (l *Ledger) queues(ctx context.Context, q store.Querier, lock string, now time.Time) (map[string][]Waiter, error) {
	// A record older than WaiterTTL has lapsed, whatever its until says.
	rows, err := store.LoadQueued(ctx, q, lock, events.FormatTime(now.Add(-events.WaiterTTL)))
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
		at, err2 := events.ParseTime(r.At)
		if err1 != nil || err2 != nil {
			continue
		}
		if lapse := at.Add(events.WaiterTTL); lapse.Before(until) {
			until = lapse
		}
		if !now.Before(until) {
			continue
		}
		wt := Waiter{Lock: r.Lock, RequestID: r.RequestID, Actor: r.Actor, HostID: b.HostID, PID: b.PID, Seq: r.Seq,
			Since: at, Until: until, Renewed: at, pidStart: b.PIDStart, bootID: b.BootID, pidNS: b.PIDNS}
		if b.QueuedSeq > 0 {
			wt.Seq = b.QueuedSeq
			if since, err := events.ParseTime(b.QueuedAt); err == nil {
				wt.Since = since
			}
		}
		h := &holding{rec: events.Record{RequestID: r.RequestID, HostID: b.HostID, PID: b.PID},
			pidStart: b.PIDStart, bootID: b.BootID, pidNS: b.PIDNS, heartbeat: at}
		if dead, _ := gone(h, l.host, l.probe); dead {
			continue
		}
		out[r.Lock] = append(out[r.Lock], wt)
	}
	for name, ws := range out {
		slices.SortStableFunc(ws, func(a, b Waiter) int { return cmp.Compare(a.Seq, b.Seq) })
		for i := range ws {
			ws[i].Position = i + 1
		}
		out[name] = ws
	}
	return out, nil
}

// Queue returns lock's queue now, in the order its waiters joined. It
// takes no lock and changes nothing.
func (l *Ledger) Queue(ctx context.Context, lock string) ([]Waiter, error) {
	if err := events.ValidateLockName(lock); err != nil {
		return nil, err
	}
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil, err
	}
	qs, err := l.queues(ctx, l.store, lock, now)
	return qs[lock], err
}

// queueable reports whether req's blocked attempt puts it in the queue: an
// exclusive acquisition that waits.
func (r AcquireRequest) queueable() bool {
	return r.Waiting && r.WaitLeft > 0 && !r.isShared() && !r.RecordBlocked
}

// ahead splits req's lock's queue at now, read in q, at req: the waiters
// ahead of it, and req's own place (nil when it is not in the queue).
func (l *Ledger) ahead(ctx context.Context, q store.Querier, req AcquireRequest, now time.Time) ([]Waiter, *Waiter, error) {
	qs, err := l.queues(ctx, q, req.Lock, now)
	queue := qs[req.Lock]
	for i, wt := range queue {
		if wt.RequestID == req.RequestID {
			return queue[:i], &queue[i], err
		}
	}
	return queue, nil, err
}

// queuedAhead reports whether a waiter other than req heads the lock's
// queue, for an exclusive acquisition of a lock that is free or whose
// holder (x, as judged) is dead: the only case decide asks it of (see
// facts.queuedAhead; steals ignore it there).
func (w *writeTx) queuedAhead(req AcquireRequest, x *judged) (bool, error) {
	if req.isShared() || x != nil && x.state != events.StateFree && x.state != events.StateDead {
		return false, nil
	}
	first, _, err := w.l.ahead(w.ctx, w.q, req, w.now)
	return len(first) > 0, err
}

// queueRefusal is the outcome of req's attempt at a lock held by its
// queue (decide's queued): recorded as blocked (reason queue), where a
// waiting req joins the queue or renews its place (see placeDue).
func (w *writeTx) queueRefusal(req AcquireRequest) (outcome error, err error) {
	first, _, err := w.l.ahead(w.ctx, w.q, req, w.now)
	if err != nil {
		return nil, err
	}
	return w.blocked(req, nil, events.StateHeld, &HeldError{Lock: req.Lock, Waited: req.Waited, Queue: first})
}

// placeDue reports whether a waiter's refused attempt records its place:
// it is not in the queue (own is nil: it joins), or its last record is old
// enough to renew.
func placeDue(own *Waiter, now time.Time) bool {
	return own == nil || now.Sub(own.Renewed) >= waiterRenewAfter
}

// queuePlace reports whether req's attempt, refused by a holder, records
// its place in the queue (it joins, or renews), and its place when it has
// one already.
func (w *writeTx) queuePlace(req AcquireRequest) (record bool, own *Waiter, err error) {
	if !req.queueable() {
		return false, nil, nil
	}
	_, own, err = w.l.ahead(w.ctx, w.q, req, w.now)
	return placeDue(own, w.now), own, err
}

// queueFields fills in a waiter's record of its place: until when it holds
// (WaiterTTL, or less when its wait ends sooner), what tells its process
// from a later one, and, for a renewal, the place it joined with.
func (w *writeTx) queueFields(req AcquireRequest, p *events.Blocked, own *Waiter) {
	p.Until = events.FormatTime(w.now.Add(min(req.WaitLeft, events.WaiterTTL)))
	if !req.NoProcess {
		_, p.PIDStart = w.l.probe.Probe(req.PID)
		p.BootID = w.l.host.BootID
		p.PIDNS = w.l.host.PIDNS
	}
	if own != nil {
		p.QueuedSeq, p.QueuedAt = own.Seq, events.FormatTime(own.Since)
	}
}

// wakes is the lock whose waiters a write wakes (Store.Changed): none for
// a write that only records waiters' places in its queue, which changes
// nothing a waiter acts on (a renewal every WaiterRenewEvery per waiter
// would wake every waiter each time); followers of the log wake all the
// same.
func (w *writeTx) wakes() string {
	if len(w.written) > 0 && !slices.ContainsFunc(w.written, func(ev *events.Event) bool {
		b, ok := ev.Payload.(*events.Blocked)
		return !ok || b.Until == ""
	}) {
		return ""
	}
	return w.v.name
}

// peekQueued answers a queued waiter's attempt at a lock that is free (or
// whose holder is dead) while others are ahead of it, without the writer
// mutex (see PeekHeld). nil: not sure.
func (l *Ledger) peekQueued(ctx context.Context, req AcquireRequest, now time.Time) *HeldError {
	if req.isShared() {
		return nil
	}
	first, own, err := l.ahead(ctx, l.store, req, now)
	if err != nil || own == nil || len(first) == 0 {
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
