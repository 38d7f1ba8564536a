package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/store"
)

// takeover is what an acquisition may take a lock over from, beyond a
// free lock, a dead holder and its own request: a stale holder with Force
// or in any steal; an active one only in a steal that says so. The
// acquire of a free, shared or exclusive lock is decided once, by acquire,
// whatever the policy.
type takeover struct {
	// steal is the explicit take-over (nil for an acquire): a refusal is
	// recorded as action_refused, and its note goes with every event.
	steal *StealRequest
}

// stale reports whether a stale holder may be taken over.
func (p takeover) stale(req AcquireRequest) bool { return req.Force || p.steal != nil }

// forced reports whether an active holder may be taken over (steal
// --active: reason forced_active).
func (p takeover) forced() bool { return p.steal != nil && p.steal.Active }

// supersedes reports whether an older holder of the same job is taken over
// (steal --supersede: reason superseded).
func (p takeover) supersedes() bool { return p.steal != nil && p.steal.Supersede }

// note is the operator's reason recorded with a take-over.
func (p takeover) note() string {
	if p.steal == nil {
		return ""
	}
	return p.steal.Note
}

// refused is the outcome of a refusal d of req under p: acquire_blocked,
// or for an active holder that a steal may not take, action_refused (d's
// what names the holders in the message: "the holder", "the holders", "the
// shared holders").
func (w *writeTx) refused(p takeover, req AcquireRequest, d decision) (error, error) {
	if p.steal == nil || d.how == "" {
		return w.blocked(req, d.holder.h, d.state, d.err)
	}
	return w.refuse(events.ActionSteal, req.Identity, d.holder.h, fmt.Errorf("%w; %s active: %s", d.err, d.what, d.how))
}

// TryAcquire makes one attempt at a lock by the state rules: free is taken,
// dead is stolen (holder_dead), stale is stolen only with Force
// (stale_lock_forced), held is refused with *HeldError, stale without Force
// with *StaleError.
func (l *Ledger) TryAcquire(ctx context.Context, req AcquireRequest) (*Acquisition, error) {
	return l.acquire(ctx, req, takeover{})
}

// Steal takes lock over: a dead or stale holder always, an active one only
// with Active. A free lock is simply acquired. An active holder without
// Active is refused (an error wrapping *HeldError) and recorded as
// action_refused.
func (l *Ledger) Steal(ctx context.Context, req StealRequest) (*Acquisition, error) {
	if err := events.ValidText("reason", req.Note, 1024, true); err != nil {
		return nil, err
	}
	return l.acquire(ctx, req.AcquireRequest, takeover{steal: &req})
}

// acquire is the one way of TryAcquire and Steal: load → judge → decide
// → apply (see decide.go), under the writer mutex at the store's
// serialisation point.
func (l *Ledger) acquire(ctx context.Context, req AcquireRequest, p takeover) (*Acquisition, error) {
	sent := time.Now()
	if err := l.prepareAcquire(&req); err != nil {
		return nil, err
	}
	if p.steal != nil {
		p.steal.AcquireRequest = req
	}
	var out *Acquisition
	err := l.write(ctx, req.Lock, func(w *writeTx) (outcome error, err error) {
		f, err := w.loadFacts(req)
		if err != nil {
			return nil, err
		}
		out, outcome, err = w.apply(req, p, decide(req, p, f, w.now))
		return outcome, err
	})
	if out != nil {
		out.sent = sent
	}
	return out, err
}

// apply carries out decision d for req under p: it writes the
// acquisition, or records the refusal and returns it as the outcome.
func (w *writeTx) apply(req AcquireRequest, p takeover, d decision) (*Acquisition, error, error) {
	switch d.verdict {
	case already:
		mode := ""
		if d.holder.shared {
			mode = events.ModeShared
		}
		return w.already(d.holder.h, d.holder.updatedSeq, mode, d.holder.limit), nil, nil
	case invalid:
		return nil, nil, d.err
	case refuse:
		outcome, err := w.refused(p, req, d)
		return nil, outcome, err
	case queued:
		// The waiter queue names who is first and records the refusal.
		outcome, err := w.queueRefusal(req)
		return nil, outcome, err
	case grant:
		if req.isShared() {
			a, err := w.take(req, nil, "", "")
			return a, nil, err
		}
		a, err := w.take(req, nil, "", p.note())
		outcome, err := w.heldByNewFile(req, err)
		return a, outcome, err
	}
	first := d.over[0]
	h, reason := first.j.h, first.reason
	switch {
	case first.j.shared && !req.isShared():
		return w.takeOverShared(req, p, d.over)
	case first.j.shared:
		// A full semaphore's slot.
		if err := store.DeleteHolder(w.ctx, w.q, req.Lock, h.rec.RequestID); err != nil {
			return nil, nil, err
		}
		a, err := w.take(req, h, reason, p.note())
		return a, nil, err
	case req.isShared():
		// A shared holding over the exclusive holder: its files go.
		taken := *h
		w.removeAfterCommit(func() error { return w.l.files.Remove(req.Lock, taken.file) })
		if err := w.removeTargetsAfterCommit(&taken); err != nil {
			return nil, nil, err
		}
		a, err := w.take(req, h, reason, p.note())
		if err != nil || h.foreign {
			return a, nil, err
		}
		return a, nil, w.saveFree(a.Seq)
	case reason == events.ReasonReclaimed:
		a, err := w.take(req, h, reason, fmt.Sprintf("request %s reclaimed by pid %d from pid %d on %s", req.RequestID, req.PID, h.rec.PID, h.rec.HostID))
		return a, nil, err
	}
	note, notAwaited := p.note(), ""
	if p.supersedes() {
		note, notAwaited = w.l.supersedeNote(h, note)
	}
	note, stop := w.l.takeoverNote(h, reason, note)
	a, err := w.take(req, h, reason, note)
	if a != nil {
		a.NotAwaited, a.StopPrevious = notAwaited, stop
	}
	return a, nil, err
}

// takeoverNote: whether the taker stops a stale holder's job first (lease.StopTakenOver), else a note why not.
func (l *Ledger) takeoverNote(h *holding, reason, note string) (string, bool) {
	v := proc.CompareBoot(h.bootID, h.heartbeat, l.host.BootID, l.host.Booted)
	if forced := reason == events.ReasonStaleForced && h.rec.PID > 0; !forced || h.rec.HostID == l.host.ID && v != proc.OtherMachine && v != proc.OtherBoot {
		return note, forced && v == proc.ThisBoot // this machine, in this boot; or gone with an earlier one
	}
	return addNote(note, "the stale holder's job may run on another machine (host "+h.rec.HostID+"): it is not stopped from here"), false
}

// already is the acquisition a request holds already: nothing is written,
// and the record's heartbeat time is dated by the decision's clock (at).
func (w *writeTx) already(h *holding, seq int64, mode string, limit int64) *Acquisition {
	return &Acquisition{Lock: h.rec.LockName, RequestID: h.rec.RequestID, FencingToken: h.token, Seq: seq,
		Record: h.rec, Already: true, Mode: mode, Limit: limit, at: w.now}
}

// StealRequest takes a lock over explicitly.
type StealRequest struct {
	AcquireRequest
	// Note is the operator's reason text, recorded with the steal.
	Note string
	// Active allows taking an active lock (reason forced_active).
	Active bool
	// Supersede takes the lock from an older holder (reason superseded).
	Supersede bool
}

// sameRequest: the ledger's holder holds the lock under the caller's request id.
func sameRequest(h *holding, id Identity) bool {
	return h != nil && !h.foreign && h.rec.RequestID == id.RequestID
}

// sameProcess: the caller's holder process is the holding's own (same
// host, pid and process start time), so a repeated acquire is idempotent.
func (w *writeTx) sameProcess(h *holding, id Identity) bool {
	if h.rec.HostID != w.l.host.ID || h.rec.PID != id.PID {
		return false
	}
	if h.bootID != "" && w.l.host.BootID != "" && h.bootID != w.l.host.BootID || !proc.SamePIDNamespace(h.pidNS, w.l.host.PIDNS) {
		return false
	}
	_, start := w.l.probe.Probe(id.PID)
	return h.pidStart == "" || start == "" || start == h.pidStart
}

// effectiveHolder reconciles the request's target files and returns who
// holds the lock: the ledger's holder, else a foreign primary file, else
// the strongest foreign file at one of the requested targets.
func (w *writeTx) effectiveHolder(req AcquireRequest) (*holding, error) {
	if err := w.reconcileTargets(req.Targets, req.Force); err != nil {
		return nil, err
	}
	if err := w.recordDisplaced(req.Identity, req.MaxAge); err != nil {
		return nil, err
	}
	if h := w.v.holder; h != nil && !h.foreign {
		return h, nil
	}
	t, err := w.l.foreignAt(req.Lock, w.v, req.Targets, w.now, req.MaxAge)
	if err != nil || t == nil {
		return w.v.holder, err
	}
	if h := w.v.holder; h != nil {
		hs, _ := judge(h, w.now, w.l.host, w.l.probe, req.MaxAge)
		if stateRank[hs] >= stateRank[t.verdict.State] {
			return h, nil
		}
	}
	return t, nil
}

// heldByNewFile turns "a lock file appeared between our check and our
// link" into a HeldError from that file.
func (w *writeTx) heldByNewFile(req AcquireRequest, err error) (error, error) {
	if err != errFileExists {
		return nil, err
	}
	cur, rerr := w.l.files.Read(req.Lock)
	if rerr != nil {
		return nil, rerr
	}
	h := foreignHolding(req.Lock, cur)
	return &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: true, Corrupt: h.corrupt}, nil
}
