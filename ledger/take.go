package ledger

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// blocked records acquire_blocked when the attempt gives up (the last
// attempt, or a waiter meeting a stale lock), or when a waiter's attempt
// refused by a holder, or by the queue (h nil), records its place in the
// lock's queue (it joins, or renews: see queue.go), and reports outcome.
func (w *writeTx) blocked(req AcquireRequest, h *holding, state string, outcome error) (error, error) {
	var queued bool
	var own *Waiter
	if state == events.StateHeld {
		var err error
		if queued, own, err = w.queuePlace(req); err != nil {
			return nil, err
		}
	}
	if !req.RecordBlocked && !(req.Waiting && state == events.StateStale) && !queued {
		return outcome, nil
	}
	p := &events.Blocked{State: state, WaitedSeconds: seconds(req.Waited), Mode: req.mode(), Limit: req.Limit, Reason: events.BlockedByQueue}
	if h != nil {
		p.Foreign, p.Reason = h.foreign, ""
		p.HeldBy, p.UnreadableFile = heldBy(h)
	}
	if queued {
		w.queueFields(req, p, own)
	}
	_, err := w.append(events.AcquireBlocked, req.Identity, p)
	if err != nil {
		return nil, err
	}
	return outcome, nil
}

// heldBy is what holds h, as events record it: its holder, or, for a file
// at the lock's path that does not parse, that file (h.rec is then a
// placeholder and is never recorded).
func heldBy(h *holding) (*events.Holder, *events.UnreadableFile) {
	if u := h.corrupt; u != nil {
		return nil, u
	}
	holder := events.HolderOf(h.rec)
	holder.UID = h.uid
	return &holder, nil
}

// take gives the lock to req: lock_acquired when prev is nil, else
// lock_stolen with the previous record and the hash of its file. An
// exclusive holding places its lock files first (they commit with the
// event); a shared one has none.
func (w *writeTx) take(req AcquireRequest, prev *holding, reason, note string) (*Acquisition, error) {
	token, err := w.nextSeq()
	if err != nil {
		return nil, err
	}
	shared := req.isShared()
	if !shared && prev != nil && prev.foreign && prev.target != "" && !slices.ContainsFunc(req.Targets, func(t events.Target) bool { return t.Path == prev.target }) {
		// Taking over another tool's file at a path the lock remembers: the
		// ledger's file replaces it there, and the path stays the lock's.
		req.Targets = append(slices.Clip(req.Targets), events.Target{Format: prev.targetFormat, Path: prev.target})
	}
	h := w.l.newHolding(req, w.now, token)
	if !shared {
		if err := w.placeFiles(h, prev); err != nil {
			return nil, err
		}
		note = withKeptAside(note, prev)
	}
	acq, out := acquisition(req, h)
	var ev *events.Event
	if prev == nil {
		acq.Note = note // a steal that found the lock free
		ev, err = w.append(events.LockAcquired, req.Identity, &acq)
	} else {
		ev, err = w.steal(req.Identity, acq, prev, reason, note, out)
	}
	if err != nil {
		return nil, err
	}
	out.Seq = ev.Seq
	if shared {
		return out, saveShared(w.ctx, w.q, h, req.Limit, ev.Seq)
	}
	return out, w.saveHolder(h, ev.Seq)
}

// acquisition is what lock_acquired and lock_stolen record of req's
// holding h, and the Acquisition it makes, with the release secret req
// asks for.
func acquisition(req AcquireRequest, h *holding) (events.Acquired, *Acquisition) {
	acq := events.Acquired{TTLSeconds: h.rec.TTLSeconds, Intent: h.rec.Intent, IntentVersion: h.rec.IntentVersion,
		FencingToken: h.token, Metadata: h.rec.Metadata, PIDStart: h.pidStart, BootID: h.bootID, Targets: h.targets,
		Mode: req.mode(), Limit: req.Limit, WaitedSeconds: seconds(req.Waited), PIDNS: h.pidNS, Run: req.Run}
	out := &Acquisition{Lock: req.Lock, RequestID: req.RequestID, FencingToken: h.token, Record: h.rec,
		Mode: req.mode(), Limit: req.Limit}
	if req.ReleaseSecret {
		out.ReleaseSecret, acq.ReleaseSecretSHA256 = newReleaseSecret()
	}
	return acq, out
}

// steal appends the lock_stolen of prev by id's acquisition acq, and says
// on out whom it took the lock from.
func (w *writeTx) steal(id Identity, acq events.Acquired, prev *holding, reason, note string, out *Acquisition) (*events.Event, error) {
	pf := prev.file
	if pf == nil {
		pf = prev.rec.File() // a shared holder has no file: its record's would-be file
	}
	rec := prev.rec
	out.Stolen, out.Reason, out.Previous, out.PreviousHash, out.PreviousPIDStart = true, reason, &rec, events.LockFileHash(pf), prev.pidStart
	st := &events.Stolen{Acquired: acq, PreviousLock: prev.rec, PreviousLockHash: out.PreviousHash, Reason: reason, Note: note}
	// The stealer is the envelope; held_by adds the uid that acquired
	// the holding taken (previous_lock has its actor and pid).
	if err := w.loadAcquirer(prev); err != nil {
		return nil, err
	}
	if prev.uid != nil {
		st.HeldBy, _ = heldBy(prev)
	}
	return w.append(events.LockStolen, id, st)
}

// placeFiles writes h's lock file and target files, replacing prev's.
func (w *writeTx) placeFiles(h, prev *holding) error {
	if err := w.onlyOwnFiles(prev != nil && prev.foreign); err != nil {
		return err
	}
	var j *os.File
	var err error
	if prev == nil || prev.target != "" {
		// Free, or taking over another tool's file at a target path: the
		// primary path has no file to replace.
		j, err = w.l.files.Place(h.rec.LockName, h.file)
	} else {
		j, err = w.l.files.Replace(h.rec.LockName, h.file)
	}
	if err != nil {
		return err
	}
	w.addJournal("", j)
	return w.placeTargets(h, prev)
}

func (l *Ledger) newHolding(req AcquireRequest, now time.Time, token int64) *holding {
	md := req.Metadata
	if md == nil {
		md = map[string]string{}
	}
	_, start := l.probe.Probe(req.PID)
	h := &holding{
		rec: events.Record{
			LockVersion: events.LockVersion, LockName: req.Lock, RequestID: req.RequestID, Actor: req.Actor,
			Intent: req.Intent, IntentVersion: req.IntentVersion, HostID: l.host.ID, PID: req.PID,
			CreatedAt: events.FormatLockTime(now), LastHeartbeatAt: events.FormatLockTime(now),
			TTLSeconds: int64(req.TTL / time.Second), Metadata: md,
		},
		created: now, heartbeat: now, pidStart: start, bootID: l.host.BootID, pidNS: l.host.PIDNS, token: token, targets: req.Targets,
	}
	h.file = h.rec.File()
	return h
}

// checkLocalPID refuses a holder pid that is not a live process here.
func (l *Ledger) checkLocalPID(pid int) error {
	if live, _ := l.probe.Probe(pid); live == proc.Gone {
		return events.Invalid("pid", fmt.Sprint(pid), "must be a running process on this host")
	}
	return nil
}
