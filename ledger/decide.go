package ledger

// The acquire decision: load → judge → decide → apply.
//
// load reads who holds the lock: its exclusive holder (the locks row, or
// another tool's file at the lock's path or at a --file target, see
// effectiveHolder) and its shared holders (lock_holders). judge applies
// the one liveness and staleness rule (judge in state.go) to each, and asks
// whether the caller's own process holds it. decide, a pure function of
// the request, the take-over policy, the judged holders and the decision's
// clock, says what happens: nothing in it reads a table, a file, a process
// or a clock. apply carries the decision out (take.go) or records its
// refusal. TryAcquire, Steal and shared or semaphore slots all go this one
// way.

import (
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
)

// judged is one holder of a lock with what judge says of it.
type judged struct {
	h *holding
	// shared: a row of lock_holders (else the lock's exclusive holder).
	shared bool
	// limit is a shared holder's slot limit (0: none).
	limit int64
	// updatedSeq is the seq of the event that last wrote the holder's row
	// (0 for another tool's file).
	updatedSeq int64
	state      string // events.StateHeld, StateStale or StateDead (see judge)
	job        []int  // the processes of its job that keep it from being dead
	// self: the holder is the caller's own process under the caller's
	// request id (see sameProcess): asking again is idempotent.
	self bool
}

// facts is everything decide knows of a lock.
type facts struct {
	exclusive *judged  // nil: no exclusive holder
	shared    []judged // ordered by request id
	// queuedAhead: another request heads the lock's live waiter queue, so
	// a lock that is free (or whose holder is dead) is not the caller's.
	queuedAhead bool
}

// verdict is what decide says happens.
type verdict int

const (
	grant    verdict = iota // a free lock or a free slot is taken: lock_acquired
	takeOver                // over are taken over: one lock_stolen each
	already                 // the caller holds it already: nothing is written
	refuse                  // err says who holds it (acquire_blocked or action_refused)
	invalid                 // err (events.Invalid) says what in the request the holders refuse
	queued                  // free, but another waiter is first in line
)

// taken is a holder an acquisition takes over, and why.
type taken struct {
	j      *judged
	reason string // lock_stolen's reason
}

// decision is decide's answer.
type decision struct {
	verdict verdict
	// over: the holders taken over, in the order their lock_stolen events
	// are appended.
	over []taken
	// holder: already, the caller's holding; refuse, the holder named.
	holder *judged
	// state: refuse, the state acquire_blocked records (held or stale).
	state string
	err   error
	// what and how, set when an active holder refuses a steal, make the
	// action_refused message (see refused): "the holder is", "take it
	// anyway with steal --active".
	what, how string
}

// loadFacts reads and judges the holders of req.Lock (load and judge).
func (w *writeTx) loadFacts(req AcquireRequest) (facts, error) {
	var f facts
	h, err := w.effectiveHolder(req)
	if err != nil {
		return f, err
	}
	sh, err := loadShared(w.ctx, w.q, req.Lock)
	if err != nil {
		return f, err
	}
	if h != nil {
		x := w.judgeHolder(h, req)
		if !h.foreign && w.v.row != nil {
			x.updatedSeq = w.v.row.UpdatedSeq
		}
		f.exclusive = &x
	}
	f.shared = make([]judged, len(sh))
	for i, s := range sh {
		f.shared[i] = w.judgeHolder(s.holding, req)
		f.shared[i].shared, f.shared[i].limit, f.shared[i].updatedSeq = true, s.limit, s.updatedSeq
	}
	f.queuedAhead, err = w.queuedAhead(req, f.exclusive)
	return f, err
}

// judgeHolder judges h for req at the decision's instant.
func (w *writeTx) judgeHolder(h *holding, req AcquireRequest) judged {
	st, job := judge(h, w.now, w.l.host, w.l.probe, req.MaxAge)
	return judged{h: h, state: st, job: job, self: sameRequest(h, req.Identity) && w.sameProcess(h, req.Identity)}
}

// decide is the one decision of every acquire, steal and take-over: who,
// if anyone, req takes the lock from under policy p, given the lock's
// judged holders f at instant now.
func decide(req AcquireRequest, p takeover, f facts, now time.Time) decision {
	if req.isShared() {
		return decideShared(req, p, f, now)
	}
	return decideExclusive(req, p, f, now)
}

// decideExclusive: at most one exclusive holder, and none beside a shared one.
func decideExclusive(req AcquireRequest, p takeover, f facts, now time.Time) decision {
	x := f.exclusive
	if x != nil && !x.h.foreign && x.h.rec.RequestID == req.RequestID {
		if x.self {
			return decision{verdict: already, holder: x}
		}
		if req.Reclaim {
			return takeOne(x, events.ReasonReclaimed)
		}
	}
	if x != nil && x.h.foreign && len(f.shared) > 0 {
		// Another tool's file beside shared holders: nobody takes either
		// over until one side is gone, so that no instant has both.
		s := &f.shared[0]
		return decision{verdict: refuse, holder: s, state: events.StateHeld, err: &HeldError{Lock: req.Lock, Holder: s.h.rec,
			Waited: req.Waited, Holders: len(f.shared), SharedHeld: true}}
	}
	if x == nil || x.state == events.StateFree {
		if len(f.shared) > 0 {
			return exclusiveOverShared(req, p, f.shared, now)
		}
		if f.queuedAhead && p.steal == nil {
			return decision{verdict: queued}
		}
		return decision{verdict: grant}
	}
	return overExclusive(req, p, x, now, f.queuedAhead)
}

// overExclusive decides req's take-over of the exclusive holder x (held,
// stale or dead), for an exclusive or a shared req; queuedAhead: another
// waiter is first in line for a dead holder's lock.
func overExclusive(req AcquireRequest, p takeover, x *judged, now time.Time, queuedAhead bool) decision {
	var reason string
	switch x.state {
	case events.StateDead:
		if queuedAhead && p.steal == nil {
			return decision{verdict: queued}
		}
		reason = events.ReasonHolderDead
	case events.StateStale:
		if !p.stale(req) {
			return staleRefusal(req, x, now, 0)
		}
		reason = events.ReasonStaleForced
	default:
		switch {
		case p.supersedes() && !req.isShared():
			reason = events.ReasonSuperseded
		case p.forced():
			reason = events.ReasonForcedActive
		default:
			held := &HeldError{Lock: req.Lock, Holder: x.h.rec, Foreign: x.h.foreign, Corrupt: x.h.corrupt, Waited: req.Waited,
				JobPIDs: x.job, SameRequest: sameRequest(x.h, req.Identity)}
			if p.steal != nil && !req.isShared() {
				held = &HeldError{Lock: req.Lock, Holder: x.h.rec, Foreign: x.h.foreign, Corrupt: x.h.corrupt}
			}
			return activeRefusal(x, held, "the holder is", "take it anyway with steal --active")
		}
	}
	if x.h.foreign && reason != events.ReasonForcedActive && reason != events.ReasonSuperseded {
		reason = events.ReasonForeignLock
	}
	return takeOne(x, reason)
}

// exclusiveOverShared decides an exclusive acquire (or steal) of a lock
// whose exclusive side is free while shared holders hold it: refused while
// any is held (unless an active steal), stale needs --force, and otherwise
// every shared holder is taken over, in order of request id.
func exclusiveOverShared(req AcquireRequest, p takeover, sh []judged, now time.Time) decision {
	if v := stalest(sh, events.StateHeld); v != nil && !p.forced() {
		held := &HeldError{Lock: req.Lock, Holder: v.h.rec, Waited: req.Waited, JobPIDs: v.job, Holders: len(sh), SharedHeld: true}
		return activeRefusal(v, held, "the shared holders are", "take the lock anyway with steal --active")
	}
	if v := stalest(sh, events.StateStale); v != nil && !p.stale(req) {
		return staleRefusal(req, v, now, 0)
	}
	d := decision{verdict: takeOver}
	for i := range sh {
		reason := events.ReasonForcedActive
		switch sh[i].state {
		case events.StateDead:
			reason = events.ReasonHolderDead
		case events.StateStale:
			reason = events.ReasonStaleForced
		}
		d.over = append(d.over, taken{j: &sh[i], reason: reason})
	}
	slices.SortStableFunc(d.over, func(a, b taken) int { return strings.Compare(a.j.h.rec.RequestID, b.j.h.rec.RequestID) })
	return d
}

// decideShared: shared holders coexist, up to the lock's limit, and never
// beside an exclusive holder.
func decideShared(req AcquireRequest, p takeover, f facts, now time.Time) decision {
	if err := checkLimit(req, f.shared); err != nil {
		return decision{verdict: invalid, err: err}
	}
	if x := f.exclusive; x != nil {
		if len(f.shared) > 0 {
			// Another tool's lock file beside shared holders (tools that
			// know only NAME.lock cannot see them): nobody takes either over
			// until one side is gone, so that no instant has both.
			return decision{verdict: refuse, holder: x, state: events.StateHeld, err: &HeldError{Lock: req.Lock,
				Holder: x.h.rec, Foreign: x.h.foreign, Corrupt: x.h.corrupt, Waited: req.Waited}}
		}
		return overExclusive(req, p, x, now, false)
	}
	for i := range f.shared {
		s := &f.shared[i]
		if s.h.rec.RequestID != req.RequestID {
			continue
		}
		if s.self {
			return decision{verdict: already, holder: s}
		}
		return decision{verdict: refuse, holder: s, state: events.StateHeld,
			err: &HeldError{Lock: req.Lock, Holder: s.h.rec, Waited: req.Waited, SameRequest: true}}
	}
	if req.Limit == 0 || int64(len(f.shared)) < req.Limit {
		return decision{verdict: grant}
	}
	// Full: take over the stalest slot that may be taken.
	if v := stalest(f.shared, events.StateDead); v != nil {
		return takeOne(v, events.ReasonHolderDead)
	}
	if v := stalest(f.shared, events.StateStale); v != nil && p.stale(req) {
		return takeOne(v, events.ReasonStaleForced)
	}
	if v := stalest(f.shared, events.StateHeld); v != nil && p.forced() {
		return takeOne(v, events.ReasonForcedActive)
	}
	if v := stalest(f.shared, events.StateStale); v != nil {
		return staleRefusal(req, v, now, req.Limit)
	}
	v := stalest(f.shared, events.StateHeld)
	held := &HeldError{Lock: req.Lock, Holder: v.h.rec, Waited: req.Waited, JobPIDs: v.job, Limit: req.Limit, Holders: len(f.shared)}
	return activeRefusal(v, held, "the holders are", "take the stalest slot anyway with steal --active")
}

func takeOne(j *judged, reason string) decision {
	return decision{verdict: takeOver, over: []taken{{j: j, reason: reason}}}
}

// staleRefusal refuses a stale holder to a caller that may not take it.
func staleRefusal(req AcquireRequest, j *judged, now time.Time, limit int64) decision {
	return decision{verdict: refuse, holder: j, state: events.StateStale, err: &StaleError{Lock: req.Lock, Holder: j.h.rec,
		Foreign: j.h.foreign, StaleSince: j.h.staleSince(now), Age: now.Sub(j.h.heartbeat), JobPIDs: j.job, Limit: limit}}
}

// activeRefusal refuses an active holder: acquire_blocked for an acquire,
// action_refused (with what and how) for a steal.
func activeRefusal(j *judged, held *HeldError, what, how string) decision {
	return decision{verdict: refuse, holder: j, state: events.StateHeld, err: held, what: what, how: how}
}

// stalest is the holder with the oldest heartbeat among js in state
// (nil when none).
func stalest(js []judged, state string) *judged {
	var best *judged
	for i := range js {
		j := &js[i]
		if j.state == state && (best == nil || j.h.heartbeat.Before(best.h.heartbeat)) {
			best = j
		}
	}
	return best
}
