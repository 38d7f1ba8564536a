package ledger

// Shared holders and semaphores.
//
// A lock name has, at any instant, either one exclusive holder (the locks
// table's row, ROOT/locks/NAME.lock, the path every tool before shared
// holders knows) or any number of shared holders (lock_holders, one row
// per request id), never both:
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
	"sort"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/schema"
	"github.com/lockledger/lockledger/store"
)

// sharedHolding is one row of lock_holders.
type sharedHolding struct {
	*holding
	limit      int64
	updatedSeq int64
}

// sharedFromRow is the shared holding a lock_holders row records.
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
	}, limit: r.Limit, updatedSeq: r.UpdatedSeq}
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
	return sharedFromRows(store.LoadHolders(ctx, q, name))
}

// sharedKey names a lock_holders row: its lock and its request id.
type sharedKey [2]string

// sharedTable maps every shared holder's key to it.
func sharedTable(rows []*sharedHolding) map[sharedKey]*sharedHolding {
	table := make(map[sharedKey]*sharedHolding, len(rows))
	for _, r := range rows {
		table[sharedKey{r.rec.LockName, r.rec.RequestID}] = r
	}
	return table
}

// loadAllShared returns every shared holder, ordered by lock and request id.
func loadAllShared(ctx context.Context, q store.Querier) ([]*sharedHolding, error) {
	return sharedFromRows(store.LoadAllHolders(ctx, q))
}

// saveShared writes h's lock_holders row: its slot limit, updated by seq.
func saveShared(ctx context.Context, tx store.Execer, h *holding, limit, seq int64) error {
	md, err := json.Marshal(h.rec.Metadata)
	if err != nil {
		return err
	}
	return store.SaveHolder(ctx, tx, &store.HolderRow{Name: h.rec.LockName, RequestID: h.rec.RequestID,
		Actor: h.rec.Actor, Intent: h.rec.Intent, IntentVersion: h.rec.IntentVersion, HostID: h.rec.HostID,
		PID: h.rec.PID, PIDStart: h.pidStart, BootID: h.bootID, CreatedAt: events.FormatTime(h.created),
		HeartbeatAt: events.FormatTime(h.heartbeat), TTLSeconds: h.rec.TTLSeconds, Metadata: string(md),
		FencingToken: h.token, Limit: limit, UpdatedSeq: seq, PIDNS: h.pidNS})
}

// isShared reports whether the request asks for a shared holding.
func (r *AcquireRequest) isShared() bool { return r.Shared || r.Limit > 0 }

func (r *AcquireRequest) mode() string {
	if r.isShared() {
		return events.ModeShared
	}
	return ""
}

// validateShared checks the shared part of a request.
func (r *AcquireRequest) validateShared() error {
	if r.Limit < 0 || r.Limit > schema.MaxLimit {
		return events.Invalid("limit", fmt.Sprint(r.Limit), fmt.Sprintf("must be 1-%d", schema.MaxLimit))
	}
	if r.isShared() && len(r.Targets) > 0 {
		return events.Invalid("file", r.Targets[0].Path,
			"must not be combined with --shared or --limit: other tools' lock files have one holder")
	}
	if r.isShared() && r.Reclaim {
		return events.Invalid("reclaim", "true", "must not be combined with --shared or --limit")
	}
	return nil
}

func describeLimit(n int64) string {
	if n == 0 {
		return "none (--shared)"
	}
	return fmt.Sprint(n)
}

// checkLimit refuses a request whose limit differs from the holders'.
func checkLimit(req AcquireRequest, sh []*sharedHolding) error {
	if len(sh) == 0 || sh[0].limit == req.Limit {
		return nil
	}
	return events.Invalid("limit", describeLimit(req.Limit), fmt.Sprintf(
		"must match the lock's current limit %s: every holder of %s passes the same --limit while any holds it",
		describeLimit(sh[0].limit), req.Lock))
}

// judged is a shared holder with its state.
type judged struct {
	s     *sharedHolding
	state string
	job   []int
}

func (w *writeTx) judgeShared(sh []*sharedHolding, maxAge time.Duration) []judged {
	out := make([]judged, len(sh))
	for i, s := range sh {
		st, job := judge(s.holding, w.now, w.l.host, w.l.probe, maxAge)
		out[i] = judged{s: s, state: st, job: job}
	}
	return out
}

// stalest is the holder with the oldest heartbeat among js whose state is
// in states (nil when none).
func stalest(js []judged, states ...string) *judged {
	var best *judged
	for i := range js {
		j := &js[i]
		ok := false
		for _, s := range states {
			ok = ok || j.state == s
		}
		if ok && (best == nil || j.s.heartbeat.Before(best.s.heartbeat)) {
			best = j
		}
	}
	return best
}

// acquireShared decides a shared acquisition under p (see the file comment).
func (w *writeTx) acquireShared(req AcquireRequest, p takeover) (*Acquisition, error, error) {
	id := req.Identity
	h, err := w.effectiveHolder(req)
	if err != nil {
		return nil, nil, err
	}
	sh, err := loadShared(w.ctx, w.q, req.Lock)
	if err != nil {
		return nil, nil, err
	}
	if err := checkLimit(req, sh); err != nil {
		return nil, nil, err
	}
	if h != nil && len(sh) > 0 {
		// Another tool's lock file beside shared holders (tools that know
		// only NAME.lock cannot see them): nobody takes either over until
		// one side is gone, so that no instant has both.
		held := &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign, Corrupt: h.corrupt, Waited: req.Waited}
		outcome, err := w.blocked(req, h, events.StateHeld, held)
		return nil, outcome, err
	}
	if h != nil {
		// An exclusive holder (the ledger's or another tool's file).
		state, job := judge(h, w.now, w.l.host, w.l.probe, req.MaxAge)
		reason := ""
		switch {
		case state == events.StateDead:
			reason = events.ReasonHolderDead
		case state == events.StateStale && p.stale(req):
			reason = events.ReasonStaleForced
		case state == events.StateHeld && p.forced():
			reason = events.ReasonForcedActive
		case state == events.StateStale:
			outcome, err := w.blocked(req, h, state, &StaleError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign,
				StaleSince: h.staleSince(w.now), Age: w.now.Sub(h.heartbeat), JobPIDs: job})
			return nil, outcome, err
		default:
			held := &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign, Corrupt: h.corrupt, Waited: req.Waited,
				JobPIDs: job, SameRequest: w.sameRequest(h, id)}
			outcome, err := w.refuseActive(p, req, h, held, "the holder is", "take it anyway with steal --active")
			return nil, outcome, err
		}
		if h.foreign && reason != events.ReasonForcedActive {
			reason = events.ReasonForeignLock
		}
		taken := *h
		w.removeAfterCommit(func() error { return w.l.files.Remove(req.Lock, taken.file) })
		w.removeAfterCommit(func() error { return w.removeTargets(&taken) })
		a, err := w.take(req, h, reason, p.note())
		if err != nil || h.foreign {
			return a, nil, err
		}
		return a, nil, w.saveFree(a.Seq)
	}
	for _, s := range sh {
		if s.rec.RequestID == id.RequestID {
			if w.sameProcess(s.holding, id) {
				return w.already(s.holding, s.updatedSeq, events.ModeShared, s.limit), nil, nil
			}
			held := &HeldError{Lock: req.Lock, Holder: s.rec, Waited: req.Waited, SameRequest: true}
			outcome, err := w.blocked(req, s.holding, events.StateHeld, held)
			return nil, outcome, err
		}
	}
	if req.Limit == 0 || int64(len(sh)) < req.Limit {
		// A free slot: a steal needs to take nobody's.
		a, err := w.take(req, nil, "", "")
		return a, nil, err
	}
	// Full: take over the stalest slot that may be taken.
	js := w.judgeShared(sh, req.MaxAge)
	var victim *judged
	reason := ""
	if v := stalest(js, events.StateDead); v != nil {
		victim, reason = v, events.ReasonHolderDead
	} else if v := stalest(js, events.StateStale); v != nil && p.stale(req) {
		victim, reason = v, events.ReasonStaleForced
	} else if v := stalest(js, events.StateHeld); v != nil && p.forced() {
		victim, reason = v, events.ReasonForcedActive
	}
	if victim != nil {
		if err := store.DeleteHolder(w.ctx, w.q, req.Lock, victim.s.rec.RequestID); err != nil {
			return nil, nil, err
		}
		a, err := w.take(req, victim.s.holding, reason, p.note())
		return a, nil, err
	}
	if v := stalest(js, events.StateStale); v != nil {
		outcome, err := w.blocked(req, v.s.holding, events.StateStale, &StaleError{Lock: req.Lock, Holder: v.s.rec,
			StaleSince: v.s.staleSince(w.now), Age: w.now.Sub(v.s.heartbeat), JobPIDs: v.job, Limit: req.Limit})
		return nil, outcome, err
	}
	v := stalest(js, events.StateHeld)
	held := &HeldError{Lock: req.Lock, Holder: v.s.rec, Waited: req.Waited, JobPIDs: v.job, Limit: req.Limit, Holders: len(sh)}
	outcome, err := w.refuseActive(p, req, v.s.holding, held, "the holders are", "take the stalest slot anyway with steal --active")
	return nil, outcome, err
}

// sharedBeside blocks an exclusive acquire (or steal) of a lock held by
// another tool's file while shared holders hold it too (see
// tryAcquireShared): handled is false when there are no shared holders.
func (w *writeTx) sharedBeside(req AcquireRequest, h *holding) (handled bool, outcome, err error) {
	if h == nil || !h.foreign {
		return false, nil, nil
	}
	sh, err := loadShared(w.ctx, w.q, req.Lock)
	if err != nil || len(sh) == 0 {
		return false, nil, err
	}
	held := &HeldError{Lock: req.Lock, Holder: sh[0].rec, Waited: req.Waited, Holders: len(sh), SharedHeld: true}
	outcome, err = w.blocked(req, sh[0].holding, events.StateHeld, held)
	return true, outcome, err
}

// exclusiveOverShared decides an exclusive acquire (or steal) of a lock
// whose exclusive side is free while shared holders hold it: blocked while
// any is held (unless an active steal), stale needs --force, and otherwise
// every shared holder is taken over, one lock_stolen each.
func (w *writeTx) exclusiveOverShared(req AcquireRequest, sh []*sharedHolding, p takeover) (*Acquisition, error, error) {
	js := w.judgeShared(sh, req.MaxAge)
	if v := stalest(js, events.StateHeld); v != nil && !p.forced() {
		held := &HeldError{Lock: req.Lock, Holder: v.s.rec, Waited: req.Waited, JobPIDs: v.job, Holders: len(sh),
			SharedHeld: true}
		outcome, err := w.refuseActive(p, req, v.s.holding, held, "the shared holders are", "take the lock anyway with steal --active")
		return nil, outcome, err
	}
	if v := stalest(js, events.StateStale); v != nil && !p.stale(req) {
		outcome, err := w.blocked(req, v.s.holding, events.StateStale, &StaleError{Lock: req.Lock, Holder: v.s.rec,
			StaleSince: v.s.staleSince(w.now), Age: w.now.Sub(v.s.heartbeat), JobPIDs: v.job})
		return nil, outcome, err
	}
	h := w.l.newHolding(req, w.now, 0)
	j, err := w.l.files.Place(req.Lock, h.file)
	if err != nil {
		outcome, err := w.heldByNewFile(req, err)
		return nil, outcome, err
	}
	w.setJournal(j)
	if err := w.placeTargets(h, nil); err != nil {
		return nil, nil, err
	}
	out := &Acquisition{Lock: req.Lock, RequestID: req.RequestID, Record: h.rec, Stolen: true}
	sort.Slice(js, func(a, b int) bool { return js[a].s.rec.RequestID < js[b].s.rec.RequestID })
	for _, v := range js {
		reason := events.ReasonForcedActive
		switch v.state {
		case events.StateDead:
			reason = events.ReasonHolderDead
		case events.StateStale:
			reason = events.ReasonStaleForced
		}
		note := p.note()
		token, err := w.nextSeq()
		if err != nil {
			return nil, nil, err
		}
		prevHash := events.LockFileHash(v.s.rec.File())
		ev, err := w.append(events.LockStolen, req.Identity, &events.Stolen{Acquired: events.Acquired{
			TTLSeconds: h.rec.TTLSeconds, Intent: h.rec.Intent, IntentVersion: h.rec.IntentVersion, FencingToken: token,
			Metadata: h.rec.Metadata, PIDStart: h.pidStart, BootID: h.bootID, Targets: h.targets,
			WaitedSeconds: seconds(req.Waited), PIDNS: h.pidNS}, PreviousLock: v.s.rec, PreviousLockHash: prevHash, Reason: reason, Note: note})
		if err != nil {
			return nil, nil, err
		}
		if err := store.DeleteHolder(w.ctx, w.q, req.Lock, v.s.rec.RequestID); err != nil {
			return nil, nil, err
		}
		rec := v.s.rec
		h.token, out.FencingToken, out.Seq = token, token, ev.Seq
		out.Reason, out.Previous, out.PreviousHash, out.PreviousPIDStart = reason, &rec, prevHash, v.s.pidStart
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

// releaseShared frees a shared holding.
func (w *writeTx) releaseShared(s *sharedHolding, id Identity, req ReleaseRequest, bySecret bool) (*ReleaseOutcome, error) {
	p := &events.Released{HeldDurationSeconds: seconds(w.now.Sub(s.created)), Result: req.Result,
		FailureStep: req.FailureStep, ExitCode: req.ExitCode, FencingToken: s.token}
	if req.Force {
		// An operator's release of the slot: audited as an exclusive
		// holder's forced release is.
		p.Forced, p.Note = true, req.Note
	}
	if p.HeldBy = w.heldByOther(id, s.holding); p.Forced || p.HeldBy != nil {
		p.ReleasedRequestID = s.rec.RequestID
	}
	if bySecret {
		p.AuthorizedBy = events.AuthorizedByReleaseSecret
	}
	ev, err := w.append(events.LockReleased, id, p)
	if err != nil {
		return nil, err
	}
	if err := store.DeleteHolder(w.ctx, w.q, s.rec.LockName, s.rec.RequestID); err != nil {
		return nil, err
	}
	return &ReleaseOutcome{Lock: s.rec.LockName, Released: true, Seq: ev.Seq, Result: req.Result, State: events.StateFree,
		Forced: p.Forced, ReleasedRequestID: p.ReleasedRequestID}, nil
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
			HeldFor: now.Sub(x.created), SinceBeat: now.Sub(x.heartbeat), StaleSince: x.staleSince(now), Unprobed: l.unprobedOf(x.holding, st)})
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

// checkShared compares lock_holders with the shared holders replay folds
// from the events, column by column, as checkProjection does the locks table.
func checkShared(ctx context.Context, q replay.Querier, st *replay.State, rep *replay.Report) error {
	rows, err := loadAllShared(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the lock_holders table", err)
	}
	table := sharedTable(rows)
	for _, lk := range st.Locks() {
		for _, h := range lk.Shared {
			key := sharedKey{lk.Name, h.Record.RequestID}
			got := table[key]
			delete(table, key)
			if got == nil {
				rep.Add(replay.Problem{Seq: h.Token, Kind: replay.KindProjectionDrift, Lock: lk.Name, Detail: fmt.Sprintf(
					"replay says request %s holds the lock shared, but lock_holders has no row for it", h.Record.RequestID)})
				continue
			}
			var diff []string
			if got.token != h.Token {
				diff = append(diff, "fencing_token")
			}
			if got.limit != lk.Limit {
				diff = append(diff, "slot_limit")
			}
			if !got.heartbeat.Equal(h.Heartbeat) {
				diff = append(diff, "heartbeat_at")
			}
			if !got.created.Equal(h.Created) {
				diff = append(diff, "created_at")
			}
			if got.rec.Actor != h.Record.Actor || got.rec.HostID != h.Record.HostID || got.rec.PID != h.Record.PID ||
				got.rec.TTLSeconds != h.Record.TTLSeconds || got.rec.Intent != h.Record.Intent ||
				got.rec.IntentVersion != h.Record.IntentVersion || got.pidStart != h.PIDStart || got.bootID != h.BootID || !proc.SamePIDNS(got.pidNS, h.PIDNS) {
				diff = append(diff, "holder")
			}
			if len(diff) > 0 {
				rep.Add(replay.Problem{Seq: got.updatedSeq, Kind: replay.KindProjectionDrift, Lock: lk.Name, Detail: fmt.Sprintf(
					"lock_holders' row of request %s differs from replay in %v", h.Record.RequestID, diff)})
			}
		}
	}
	for _, r := range rows {
		if r.updatedSeq > st.Seq {
			rep.Add(replay.Problem{Seq: st.Seq + 1, Kind: replay.KindTruncated, Lock: r.rec.LockName, Detail: fmt.Sprintf(
				"the log ends at seq %d, but lock_holders records shared holder %s as updated by seq %d: events %d-%d (at least) are gone",
				st.Seq, r.rec.RequestID, r.updatedSeq, st.Seq+1, r.updatedSeq)})
		}
		if table[sharedKey{r.rec.LockName, r.rec.RequestID}] != nil {
			rep.Add(replay.Problem{Seq: r.updatedSeq, Kind: replay.KindProjectionDrift, Lock: r.rec.LockName, Detail: fmt.Sprintf(
				"lock_holders has a row of request %s, but replay has no such shared holder", r.rec.RequestID)})
		}
	}
	return nil
}
