package ledger

// Shared holders and semaphores.
//
// A lock name has, at any instant, either one exclusive holder (its
// lock_holders row with exclusive = 1, and ROOT/locks/NAME.lock, the path
// every tool before shared holders knows) or any number of shared holders
// (lock_holders, one row per request id), never both:
//
//   - an exclusive acquirer is blocked (ErrHeld) while any shared holder is
//     held, and a shared acquirer while an exclusive holder is;
//   - shared holders coexist; with a limit N (a semaphore) at most N of
//     them at once. "--shared" is a semaphore without a limit; "--limit N"
//     implies shared. Every holder of a name passes the same limit while
//     any holds it: a mismatch is invalid input, which names the current
//     limit.
//   - each shared holder has its own request id, fencing token (the seq of
//     its acquiring event), TTL, heartbeats and release, and is judged
//     free/held/stale/dead on its own.
//   - a full semaphore's acquirer takes over a slot whose holder is dead
//     (holder_dead), or with --force the stalest stale one
//     (stale_lock_forced); `steal --limit` of a full semaphore takes the
//     stalest slot, a live one only with --active (forced_active); with a
//     free slot it takes that. An exclusive acquirer
//     (or steal) facing shared holders none of which is live takes over
//     every one of them: one lock_stolen per previous holder, in order of
//     request id, the last one's fencing token the holding's.
//
// Shared holders project no lock file: NAME.lock stays the exclusive
// holder's alone (other tools read it as "one holder"), and --file targets
// are refused with shared holders.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// sharedHolding is one row of lock_holders (a shared holder, or with
// exclusive the exclusive one).
type sharedHolding struct {
	*holding
	limit      int64
	updatedSeq int64
	exclusive  bool
}

// sharedFromRow is the holding a lock_holders row records.
func sharedFromRow(r *store.HolderRow) *sharedHolding {
	meta := map[string]string{}
	_ = json.Unmarshal([]byte(r.Metadata), &meta)
	c, _ := events.ParseTime(r.CreatedAt)
	h, _ := events.ParseTime(r.HeartbeatAt)
	return &sharedHolding{holding: &holding{
		rec: events.Record{LockVersion: events.LockVersion, LockName: r.Name, RequestID: r.RequestID, Actor: r.Actor,
			Intent: r.Intent, IntentVersion: r.IntentVersion, HostID: r.HostID, PID: r.PID, CreatedAt: events.FormatLockTime(c),
			LastHeartbeatAt: events.FormatLockTime(h), TTLSeconds: r.TTLSeconds, Metadata: meta},
		created: c, heartbeat: h, pidStart: r.PIDStart, bootID: r.BootID, pidNS: r.PIDNS, token: r.FencingToken,
	}, limit: r.Limit, updatedSeq: r.UpdatedSeq, exclusive: r.Exclusive}
}

func sharedFromRows(rows []*store.HolderRow, err error) ([]*sharedHolding, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*sharedHolding, len(rows))
	for i, r := range rows {
		out[i] = sharedFromRow(r)
	}
	return out, nil
}

// loadShared returns a lock's shared holders, ordered by request id.
func loadShared(ctx context.Context, q store.Querier, name string) ([]*sharedHolding, error) {
	return sharedFromRows(store.LoadShared(ctx, q, name))
}

// holderKey names a lock_holders row: its lock and its request id.
func holderKey(r *store.HolderRow) [2]string { return [2]string{r.Name, r.RequestID} }

// loadAllShared returns every shared holder, ordered by lock and request
// id: lock_holders' exclusive rows are the locks' holders, not shared ones.
func loadAllShared(ctx context.Context, q store.Querier) ([]*sharedHolding, error) {
	rows, err := store.LoadAllHolders(ctx, q)
	return sharedFromRows(slices.DeleteFunc(rows, func(r *store.HolderRow) bool { return r.Exclusive }), err)
}

// saveShared writes h's lock_holders row as a shared holder's: its slot
// limit, updated by seq.
func saveShared(ctx context.Context, tx store.Execer, h *holding, limit, seq int64) error {
	return store.SaveHolder(ctx, tx, holderRow(h, limit, seq))
}

// holderRow is h's lock_holders row, with slot limit limit, updated by seq.
func holderRow(h *holding, limit, seq int64) *store.HolderRow {
	md, _ := json.Marshal(h.rec.Metadata) // a map of strings always marshals
	return &store.HolderRow{Name: h.rec.LockName, RequestID: h.rec.RequestID,
		Actor: h.rec.Actor, Intent: h.rec.Intent, IntentVersion: h.rec.IntentVersion, HostID: h.rec.HostID,
		PID: h.rec.PID, PIDStart: h.pidStart, BootID: h.bootID, CreatedAt: events.FormatTime(h.created),
		HeartbeatAt: events.FormatTime(h.heartbeat), TTLSeconds: h.rec.TTLSeconds, Metadata: string(md),
		FencingToken: h.token, Limit: limit, UpdatedSeq: seq, PIDNS: h.pidNS}
}

// isShared reports whether the request asks for a shared holding.
func (r *AcquireRequest) isShared() bool { return r.Shared || r.Limit > 0 }

func (r *AcquireRequest) mode() string {
	if r.isShared() {
		return events.ModeShared
	}
	return ""
}

func describeLimit(n int64) string {
	if n == 0 {
		return "none (--shared)"
	}
	return fmt.Sprint(n)
}

// checkLimit refuses a request whose limit differs from the holders'.
func checkLimit(req AcquireRequest, sh []judged) error {
	if len(sh) == 0 || sh[0].limit == req.Limit {
		return nil
	}
	return events.Invalid("limit", describeLimit(req.Limit), fmt.Sprintf(
		"must match the lock's current limit %s: every holder of %s passes the same --limit while any holds it",
		describeLimit(sh[0].limit), req.Lock))
}

// takeOverShared gives the lock to an exclusive req over every shared
// holder in over (see exclusiveOverShared): its lock file is placed, and
// each holder is taken over by a lock_stolen of its own, the last one's
// fencing token the holding's.
func (w *writeTx) takeOverShared(req AcquireRequest, p takeover, over []taken) (*Acquisition, error, error) {
	h := w.l.newHolding(req, w.now, 0)
	j, err := w.l.files.Place(req.Lock, h.file)
	if err != nil {
		outcome, err := w.heldByNewFile(req, err)
		return nil, outcome, err
	}
	w.addJournal("", j)
	if err := w.placeTargets(h, nil); err != nil {
		return nil, nil, err
	}
	acq, out := acquisition(req, h)
	for _, t := range over {
		token, err := w.nextSeq()
		if err != nil {
			return nil, nil, err
		}
		acq.FencingToken = token
		ev, err := w.steal(req.Identity, acq, t.j.h, t.reason, p.note(), out)
		if err != nil {
			return nil, nil, err
		}
		if err := store.DeleteHolder(w.ctx, w.q, req.Lock, t.j.h.rec.RequestID); err != nil {
			return nil, nil, err
		}
		h.token, out.FencingToken, out.Seq = token, token, ev.Seq
	}
	return out, nil, w.saveHolder(h, out.Seq)
}

// sharedHolderOf returns request requestID's shared holding of lock (nil
// when it has none).
func (w *writeTx) sharedHolderOf(lock, requestID string) (*sharedHolding, error) {
	sh, err := loadShared(w.ctx, w.q, lock)
	if err != nil {
		return nil, err
	}
	for _, s := range sh {
		if s.rec.RequestID == requestID {
			return s, nil
		}
	}
	return nil, nil
}

// heartbeatShared renews a shared holding.
func (w *writeTx) heartbeatShared(s *sharedHolding, id Identity) (*Acquisition, error) {
	renewed := *s.holding
	renewed.heartbeat = w.now
	renewed.rec.LastHeartbeatAt = events.FormatLockTime(w.now)
	ev, err := w.append(events.LockHeartbeat, Identity{RequestID: id.RequestID, Actor: s.rec.Actor, PID: s.rec.PID}, &events.Heartbeat{})
	if err != nil {
		return nil, err
	}
	return &Acquisition{Lock: s.rec.LockName, RequestID: id.RequestID, FencingToken: s.token, Seq: ev.Seq,
		Record: renewed.rec, Mode: events.ModeShared, Limit: s.limit}, saveShared(w.ctx, w.q, &renewed, s.limit, ev.Seq)
}

// SharedHolder is one shared holder of a lock, judged.
type SharedHolder struct {
	Holder       events.Record
	FencingToken int64
	State        string
	JobPIDs      []int
	HeldFor      time.Duration
	SinceBeat    time.Duration
	StaleSince   time.Time
	Unprobed     string // see LockStatus.Unprobed
}

// addShared fills s's shared holders (its exclusive side is free): the
// lock's state is the strongest of theirs (held, else stale, else dead)
// and Holder the stalest holder in that state.
func (l *Ledger) addShared(s *LockStatus, sh []*sharedHolding, now time.Time) {
	if len(sh) == 0 || s.Holder != nil {
		return
	}
	s.Mode, s.Limit = events.ModeShared, sh[0].limit
	best := -1
	for _, x := range sh {
		st, job := judge(x.holding, now, l.host, l.probe, 0)
		s.Shared = append(s.Shared, SharedHolder{Holder: x.rec, FencingToken: x.token, State: st, JobPIDs: job,
			HeldFor: heldFor(now, x.created), SinceBeat: now.Sub(x.heartbeat), StaleSince: x.staleSince(now), Unprobed: l.unprobedOf(x.holding, st)})
		i := len(s.Shared) - 1
		if best < 0 || stateRank[st] > stateRank[s.Shared[best].State] ||
			st == s.Shared[best].State && x.heartbeat.Before(sh[best].heartbeat) {
			best = i
		}
	}
	b := s.Shared[best]
	rec := b.Holder
	s.State, s.Holder, s.FencingToken, s.JobPIDs = b.State, &rec, b.FencingToken, b.JobPIDs
	s.HeldFor, s.SinceBeat, s.StaleSince, s.Unprobed = b.HeldFor, b.SinceBeat, b.StaleSince, b.Unprobed
}

// checkHolders compares lock_holders, exclusive and shared rows alike,
// with the holders replay folds from the events, column by column.
func checkHolders(ctx context.Context, q replay.Querier, st *replay.State, rep *verify.Report) error {
	rows, err := store.LoadAllHolders(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the lock_holders table", err)
	}
	for _, r := range rows {
		if r.UpdatedSeq > st.Seq {
			rep.Add(verify.Problem{Seq: st.Seq + 1, Kind: verify.KindTruncated, Lock: r.Name, Detail: fmt.Sprintf(
				"the log ends at seq %d, but lock_holders records holder %s as updated by seq %d: events %d-%d (at least) are gone",
				st.Seq, r.RequestID, r.UpdatedSeq, st.Seq+1, r.UpdatedSeq)})
		}
	}
	for _, d := range drifts(replayHolders(st), rows, holderKey) {
		switch want, got := d.want, d.got; {
		case want == nil:
			rep.Add(drifted(got.UpdatedSeq, got.Name, "lock_holders has a row of request %s (%s), but replay has no such holder", got.RequestID, holderMode(got)))
		case got == nil:
			rep.Add(drifted(want.FencingToken, want.Name, "replay says request %s holds the lock %s, but lock_holders has no row for it", want.RequestID, holderMode(want)))
		default:
			rep.Add(drifted(got.UpdatedSeq, want.Name, "lock_holders' row of request %s differs from replay in %s", want.RequestID, strings.Join(d.diff, ", ")))
		}
	}
	return nil
}

// replayHolders are the lock_holders rows st's holders make, in order of
// lock and request id.
func replayHolders(st *replay.State) []*store.HolderRow {
	var out []*store.HolderRow
	for _, lk := range st.Locks() {
		if lk.Held {
			out = append(out, lk.HolderRow(lk.Holder, true))
		}
		for _, h := range lk.Shared {
			out = append(out, lk.HolderRow(h, false))
		}
	}
	return out
}

func holderMode(r *store.HolderRow) string {
	if r.Exclusive {
		return "exclusively"
	}
	return "shared"
}
