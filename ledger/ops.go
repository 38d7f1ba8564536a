package ledger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
)

// Identity says who acts: the request, the actor and the process.
type Identity struct {
	RequestID string // "" generates req_<ULID>
	Actor     string // "" uses DefaultActor()
	PID       int    // 0 uses this process
}

// DefaultActor is LOCKLEDGER_ACTOR, else USER, else "unknown".
func DefaultActor() string {
	for _, k := range []string{"LOCKLEDGER_ACTOR", "USER"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "unknown"
}

func (l *Ledger) resolve(id Identity, now time.Time) (Identity, error) {
	if id.RequestID == "" {
		id.RequestID = events.NewRequestID(now)
	}
	if err := events.ValidateRequestID(id.RequestID); err != nil {
		return id, err
	}
	if id.Actor == "" {
		id.Actor = DefaultActor()
	}
	if err := validText("actor", id.Actor, 256, false); err != nil {
		return id, err
	}
	if id.PID == 0 {
		id.PID = os.Getpid()
	}
	if id.PID < 0 {
		return id, events.Invalid("pid", fmt.Sprint(id.PID), "must be a positive process id")
	}
	return id, nil
}

func validText(field, s string, max int, emptyOK bool) error {
	if s == "" && !emptyOK {
		return events.Invalid(field, s, "must not be empty")
	}
	if len(s) > max {
		return events.Invalid(field, s[:32]+"...", fmt.Sprintf("must be at most %d bytes", max))
	}
	if !utf8.ValidString(s) {
		return events.Invalid(field, strings.ToValidUTF8(s, "\uFFFD"), "must be valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return events.Invalid(field, s, "must not contain control characters")
		}
	}
	return nil
}

// AcquireRequest asks for a lock.
type AcquireRequest struct {
	Lock string
	Identity
	Intent        string
	IntentVersion string
	TTL           time.Duration // 0 uses DefaultTTL
	Metadata      map[string]string
	// Force takes over a stale lock (never an active one).
	Force bool
	// RecordBlocked appends acquire_blocked when the attempt gives up;
	// a waiting caller sets it only on its last attempt.
	RecordBlocked bool
	// Waited is how long the caller has waited so far (for acquire_blocked).
	Waited time.Duration
	// Targets are extra lock files in other tools' formats to project.
	Targets []events.Target
	// MaxAge, when set, makes a holder older than it count as stale (and is
	// BSO's zombie age for BSO files).
	MaxAge time.Duration
}

func (r *AcquireRequest) validate() error {
	if err := events.ValidateLockName(r.Lock); err != nil {
		return err
	}
	if r.TTL == 0 {
		r.TTL = DefaultTTL
	}
	if err := ValidateTTL(r.TTL); err != nil {
		return err
	}
	if err := validText("intent", r.Intent, 256, true); err != nil {
		return err
	}
	if err := validText("intent version", r.IntentVersion, 256, true); err != nil {
		return err
	}
	if r.MaxAge < 0 {
		return events.Invalid("max age", r.MaxAge.String(), "must not be negative")
	}
	if len(r.Metadata) > MaxMetadataEntries {
		return events.Invalid("metadata", fmt.Sprintf("%d entries", len(r.Metadata)), fmt.Sprintf("must have at most %d entries", MaxMetadataEntries))
	}
	total := 0
	for k, v := range r.Metadata {
		if err := validText("metadata key", k, 128, false); err != nil {
			return err
		}
		if err := validText("metadata value of "+k, v, 1024, true); err != nil {
			return err
		}
		total += len(k) + len(v)
	}
	if total > MaxMetadataBytes {
		return events.Invalid("metadata", fmt.Sprintf("%d bytes", total), fmt.Sprintf("keys and values must total at most %d bytes", MaxMetadataBytes))
	}
	return nil
}

// Bounds on an acquisition's metadata. With every other field at its own
// bound, they keep the lock file (where metadata is written out, escaped
// and indented) well under the size any reader accepts (maxLockFile):
// text is valid UTF-8 without control characters, so escaping at most
// doubles it.
const (
	MaxMetadataEntries = 64
	MaxMetadataBytes   = 16 << 10
)

// ValidateTTL checks a TTL: whole seconds, at least 1 s, at most MaxTTL.
func ValidateTTL(d time.Duration) error {
	switch {
	case d < time.Second:
		return events.Invalid("ttl", d.String(), "must be at least 1s")
	case d%time.Second != 0:
		return events.Invalid("ttl", d.String(), "must be whole seconds (ttl_seconds is an integer)")
	case d > MaxTTL:
		return events.Invalid("ttl", d.String(), "must be at most "+MaxTTL.String())
	}
	return nil
}

// Acquisition is a lock taken.
type Acquisition struct {
	Lock         string
	RequestID    string
	FencingToken int64
	Seq          int64 // the lock_acquired / lock_stolen event
	Record       events.Record
	// Stolen is set when the lock was taken from another holder.
	Stolen       bool
	Reason       string
	Previous     *events.Record
	PreviousHash string
	// Already: the request held the lock before this call; nothing was written.
	Already bool
}

// TryAcquire makes one attempt at a lock by the state rules: free is taken,
// dead is stolen (holder_dead), stale is stolen only with Force
// (stale_lock_forced), held is refused with *HeldError, stale without Force
// with *StaleError.
func (l *Ledger) TryAcquire(ctx context.Context, req AcquireRequest) (*Acquisition, error) {
	if err := l.prepareAcquire(&req); err != nil {
		return nil, err
	}
	id := req.Identity
	var out *Acquisition
	err := l.write(ctx, req.Lock, func(w *writeTx) (error, error) {
		h, err := w.effectiveHolder(req)
		if err != nil {
			return nil, err
		}
		if h != nil && !h.foreign && h.rec.RequestID == id.RequestID {
			out = &Acquisition{Lock: req.Lock, RequestID: id.RequestID, FencingToken: h.token, Seq: w.v.row.updatedSeq,
				Record: h.rec, Already: true}
			return nil, nil
		}
		state, job := judge(h, w.now, l.host, l.probe, req.MaxAge)
		switch state {
		case events.StateFree:
			a, err := w.take(req, nil, "", "")
			out = a
			return w.heldByNewFile(req, err)
		case events.StateDead:
			reason := events.ReasonHolderDead
			if h.foreign {
				reason = events.ReasonForeignLock
			}
			a, err := w.take(req, h, reason, "")
			out = a
			return nil, err
		case events.StateStale:
			if req.Force {
				reason := events.ReasonStaleForced
				if h.foreign {
					reason = events.ReasonForeignLock
				}
				a, err := w.take(req, h, reason, "")
				out = a
				return nil, err
			}
			return w.blocked(req, h, state, &StaleError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign,
				StaleSince: h.staleSince(), Age: w.now.Sub(h.heartbeat), JobPIDs: job})
		default:
			return w.blocked(req, h, state, &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign,
				Corrupt: h.corrupt, Waited: req.Waited, JobPIDs: job})
		}
	})
	return out, err
}

// prepareAcquire validates an acquisition request and resolves who asks: the
// request id, the actor, and a holder pid that must be alive here.
func (l *Ledger) prepareAcquire(req *AcquireRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	id, err := l.resolve(req.Identity, l.now())
	if err != nil {
		return err
	}
	req.Identity = id
	if err := l.checkLocalPID(id.PID); err != nil {
		return err
	}
	return l.ValidateTargets(req.Targets)
}

// effectiveHolder reconciles the request's target files and returns who
// holds the lock: the ledger's holder, else a foreign primary file, else
// the strongest foreign file at one of the requested targets.
func (w *writeTx) effectiveHolder(req AcquireRequest) (*holding, error) {
	if err := w.reconcileTargets(req.Targets); err != nil {
		return nil, err
	}
	if w.v.holder != nil {
		return w.v.holder, nil
	}
	return w.foreignTarget(req)
}

// heldByNewFile turns "a lock file appeared between our check and our
// link" into a HeldError from that file.
func (w *writeTx) heldByNewFile(req AcquireRequest, err error) (error, error) {
	if err != errFileExists {
		return nil, err
	}
	cur, rerr := w.l.files.read(req.Lock)
	if rerr != nil {
		return nil, rerr
	}
	h := foreignHolding(req.Lock, cur.data)
	return &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: true, Corrupt: h.corrupt}, nil
}

// blocked records acquire_blocked (when asked) and reports outcome.
func (w *writeTx) blocked(req AcquireRequest, h *holding, state string, outcome error) (error, error) {
	if !req.RecordBlocked {
		return outcome, nil
	}
	_, err := w.append(events.AcquireBlocked, req.Identity, &events.Blocked{
		HeldBy: events.HolderOf(h.rec), State: state, WaitedSeconds: seconds(req.Waited), Foreign: h.foreign,
	})
	if err != nil {
		return nil, err
	}
	return outcome, nil
}

// take gives the lock to req: lock_acquired when prev is nil, else
// lock_stolen with the previous record and the hash of its file.
func (w *writeTx) take(req AcquireRequest, prev *holding, reason, note string) (*Acquisition, error) {
	token, err := w.nextSeq()
	if err != nil {
		return nil, err
	}
	h := w.l.newHolding(req, w.now, token)
	var j *os.File
	if prev == nil || prev.target != "" {
		// Free, or taking over another tool's file at a target path: the
		// primary path has no file to replace.
		j, err = w.l.files.place(req.Lock, h.file)
	} else {
		j, err = w.l.files.replace(req.Lock, h.file)
	}
	if err != nil {
		return nil, err
	}
	w.setJournal(j)
	if err := w.placeTargets(h, prev); err != nil {
		return nil, err
	}
	acq := events.Acquired{TTLSeconds: h.rec.TTLSeconds, Intent: h.rec.Intent, IntentVersion: h.rec.IntentVersion,
		FencingToken: token, Metadata: h.rec.Metadata, PIDStart: h.pidStart, BootID: h.bootID, Targets: h.targets}
	out := &Acquisition{Lock: req.Lock, RequestID: req.RequestID, FencingToken: token, Record: h.rec}
	var ev *events.Event
	if prev == nil {
		ev, err = w.append(events.LockAcquired, req.Identity, &acq)
	} else {
		out.Stolen, out.Reason, out.Previous, out.PreviousHash = true, reason, &prev.rec, fileHash(prev.file)
		ev, err = w.append(events.LockStolen, req.Identity, &events.Stolen{Acquired: acq, PreviousLock: prev.rec,
			PreviousLockHash: out.PreviousHash, Reason: reason, Note: note})
	}
	if err != nil {
		return nil, err
	}
	out.Seq = ev.Seq
	return out, w.saveHolder(h, ev.Seq)
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
		created: now, heartbeat: now, pidStart: start, bootID: l.host.BootID, token: token, targets: req.Targets,
	}
	h.file = h.rec.File()
	return h
}

// checkLocalPID refuses a holder pid that is not a live process here.
func (l *Ledger) checkLocalPID(pid int) error {
	if live, _ := l.probe.Probe(pid); live == Gone {
		return events.Invalid("pid", fmt.Sprint(pid), "must be a running process on this host")
	}
	return nil
}

// Heartbeat renews a lock held by id.RequestID. A heartbeat that finds the
// lock gone records heartbeat_failed with lock_lost and returns a
// *NotHolderError wrapping ErrLost.
func (l *Ledger) Heartbeat(ctx context.Context, lock string, id Identity) (*Acquisition, error) {
	return l.heartbeat(ctx, lock, id, 0)
}

// heartbeat renews; priorFailures counts the caller's failed attempts just
// before this one, recorded if this one finds the lock lost.
func (l *Ledger) heartbeat(ctx context.Context, lock string, id Identity, priorFailures int) (*Acquisition, error) {
	if err := events.ValidateLockName(lock); err != nil {
		return nil, err
	}
	if id.RequestID == "" {
		return nil, events.Invalid("request id", "", "is required to heartbeat")
	}
	id, err := l.resolve(id, l.now())
	if err != nil {
		return nil, err
	}
	var out *Acquisition
	err = l.write(ctx, lock, func(w *writeTx) (error, error) {
		h := w.v.holder
		if h == nil || h.foreign || h.rec.RequestID != id.RequestID {
			lost := &NotHolderError{Lock: lock, RequestID: id.RequestID, Lost: true}
			if h != nil {
				lost.Holder = &h.rec
			}
			if _, err := w.append(events.HeartbeatFailed, id, &events.HeartbeatFailedPayload{
				ConsecutiveFailures: priorFailures + 1, Error: lost.Error(), LockLost: true}); err != nil {
				return nil, err
			}
			return lost, nil
		}
		renewed := *h
		renewed.heartbeat = w.now
		renewed.rec.LastHeartbeatAt = events.FormatLockTime(w.now)
		renewed.file = renewed.rec.File()
		if !w.v.interloper && !bytes.Equal(renewed.file, h.file) {
			j, err := l.files.replace(lock, renewed.file)
			if err != nil {
				return nil, err
			}
			w.setJournal(j)
		}
		if err := w.reconcileTargets(nil); err != nil {
			return nil, err
		}
		if err := w.refreshTargets(h, &renewed); err != nil {
			return nil, err
		}
		ev, err := w.append(events.LockHeartbeat, Identity{RequestID: id.RequestID, Actor: h.rec.Actor, PID: h.rec.PID}, &events.Heartbeat{})
		if err != nil {
			return nil, err
		}
		out = &Acquisition{Lock: lock, RequestID: id.RequestID, FencingToken: h.token, Seq: ev.Seq, Record: renewed.rec}
		return nil, w.saveHolder(&renewed, ev.Seq)
	})
	return out, err
}

// RecordHeartbeatFailure appends heartbeat_failed for a holder whose
// heartbeats keep failing (or who found its lock lost).
func (l *Ledger) RecordHeartbeatFailure(ctx context.Context, lock string, id Identity, consecutive int, cause string, lost bool) error {
	if cause == "" {
		cause = "unknown error"
	}
	if len(cause) > 4096 {
		cause = cause[:4096]
	}
	return l.write(ctx, lock, func(w *writeTx) (error, error) {
		_, err := w.append(events.HeartbeatFailed, id, &events.HeartbeatFailedPayload{
			ConsecutiveFailures: consecutive, Error: cause, LockLost: lost})
		return nil, err
	})
}

// ReleaseRequest frees a lock.
type ReleaseRequest struct {
	Lock string
	Identity
	Result      string // success (default), failure, cancelled
	FailureStep string
	ExitCode    *int
	// Force releases a lock held by someone else, recording forced: true.
	Force bool
}

// Release frees a lock held by req.RequestID. Releasing a lock the request
// already released is a no-op; a lock held by another request is refused
// with *NotHolderError unless Force.
func (l *Ledger) Release(ctx context.Context, req ReleaseRequest) error {
	if err := events.ValidateLockName(req.Lock); err != nil {
		return err
	}
	if req.RequestID == "" && !req.Force {
		return events.Invalid("request id", "", "is required to release (or use --force)")
	}
	if req.Result == "" {
		req.Result = events.ResultSuccess
	}
	switch req.Result {
	case events.ResultSuccess, events.ResultFailure, events.ResultCancelled:
	default:
		return events.Invalid("result", req.Result, "must be success, failure or cancelled")
	}
	if err := validText("failure step", req.FailureStep, 256, true); err != nil {
		return err
	}
	if req.ExitCode != nil && (*req.ExitCode < 0 || *req.ExitCode > 255) {
		return events.Invalid("exit code", fmt.Sprint(*req.ExitCode), "must be 0-255")
	}
	id, err := l.resolve(req.Identity, l.now())
	if err != nil {
		return err
	}
	return l.write(ctx, req.Lock, func(w *writeTx) (error, error) {
		h := w.v.holder
		if h == nil {
			last, err := lastHoldingEventOf(ctx, w.q, req.Lock, id.RequestID)
			if err != nil {
				return nil, err
			}
			switch last {
			case string(events.LockReleased):
				return nil, nil // released already: idempotent
			case "":
				if req.Force {
					return nil, nil // nothing to force
				}
				return &NotHolderError{Lock: req.Lock, RequestID: id.RequestID}, nil
			default:
				if req.Force {
					return nil, nil
				}
				return &NotHolderError{Lock: req.Lock, RequestID: id.RequestID, Lost: true}, nil
			}
		}
		mine := !h.foreign && h.rec.RequestID == id.RequestID
		if !mine && !req.Force {
			lost := false
			if last, err := lastHoldingEventOf(ctx, w.q, req.Lock, id.RequestID); err != nil {
				return nil, err
			} else if last == string(events.LockAcquired) || last == string(events.LockStolen) || last == string(events.LockHeartbeat) {
				lost = true
			}
			return &NotHolderError{Lock: req.Lock, RequestID: id.RequestID, Holder: &h.rec, Lost: lost}, nil
		}
		if err := l.files.remove(req.Lock, h.file); err != nil {
			return nil, err
		}
		if err := w.reconcileTargets(nil); err != nil {
			return nil, err
		}
		if err := w.removeTargets(h); err != nil {
			return nil, err
		}
		w.touched = true
		actor := id
		if mine {
			actor.Actor, actor.PID = h.rec.Actor, h.rec.PID
		}
		p := &events.Released{HeldDurationSeconds: seconds(w.now.Sub(h.created)), Result: req.Result,
			FailureStep: req.FailureStep, ExitCode: req.ExitCode, Forced: !mine, FencingToken: h.token}
		if !mine {
			p.ReleasedRequestID = h.rec.RequestID
		}
		if h.foreign && (h.created.IsZero() || h.created.After(w.now)) {
			p.HeldDurationSeconds = 0
		}
		ev, err := w.append(events.LockReleased, actor, p)
		if err != nil {
			return nil, err
		}
		if h.foreign {
			return nil, nil // the ledger never held it: no row to free
		}
		return nil, w.saveFree(ev.Seq)
	})
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

// Steal takes lock over: a dead or stale holder always, an active one only
// with Active. A free lock is simply acquired.
func (l *Ledger) Steal(ctx context.Context, req StealRequest) (*Acquisition, error) {
	if err := validText("reason", req.Note, 1024, true); err != nil {
		return nil, err
	}
	if err := l.prepareAcquire(&req.AcquireRequest); err != nil {
		return nil, err
	}
	id := req.Identity
	var out *Acquisition
	err := l.write(ctx, req.Lock, func(w *writeTx) (error, error) {
		h, err := w.effectiveHolder(req.AcquireRequest)
		if err != nil {
			return nil, err
		}
		if h != nil && !h.foreign && h.rec.RequestID == id.RequestID {
			out = &Acquisition{Lock: req.Lock, RequestID: id.RequestID, FencingToken: h.token, Record: h.rec, Already: true}
			return nil, nil
		}
		state, _ := judge(h, w.now, l.host, l.probe, req.MaxAge)
		var reason string
		switch state {
		case events.StateFree:
			a, err := w.take(req.AcquireRequest, nil, "", "")
			out = a
			return w.heldByNewFile(req.AcquireRequest, err)
		case events.StateDead:
			reason = events.ReasonHolderDead
		case events.StateStale:
			reason = events.ReasonStaleForced
		default:
			switch {
			case req.Supersede:
				reason = events.ReasonSuperseded
			case req.Active:
				reason = events.ReasonForcedActive
			default:
				return &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign, Corrupt: h.corrupt}, nil
			}
		}
		if h.foreign && reason != events.ReasonForcedActive && reason != events.ReasonSuperseded {
			reason = events.ReasonForeignLock
		}
		a, err := w.take(req.AcquireRequest, h, reason, req.Note)
		out = a
		return nil, err
	})
	return out, err
}

// LockStatus is one lock's state at an instant.
type LockStatus struct {
	Name         string
	State        string
	JobPIDs      []int // processes of the holder's job still running here, its own process gone
	Holder       *events.Record
	FencingToken int64
	Foreign      bool
	Corrupt      bool
	Interloper   bool // a foreign file sits at the path of a lock the ledger holds
	HeldFor      time.Duration
	SinceBeat    time.Duration
	StaleSince   time.Time
	Path         string
	// Problem: the lock's file could not be read (a symlink, a directory,
	// no permission, or no locks directory); the rest is the locks
	// table's alone.
	Problem string
}

// Status reads one lock. It takes no lock and changes nothing.
func (l *Ledger) Status(ctx context.Context, lock string) (*LockStatus, error) {
	if err := events.ValidateLockName(lock); err != nil {
		return nil, err
	}
	r, err := loadRow(ctx, l.db, lock)
	if err != nil {
		return nil, err
	}
	v, err := l.inspect(lock, r)
	if err != nil {
		return nil, err
	}
	return l.status(v, l.now().UTC()), nil
}

func (l *Ledger) status(v *view, now time.Time) *LockStatus {
	state, job := judge(v.holder, now, l.host, l.probe, 0)
	s := &LockStatus{Name: v.name, State: state, JobPIDs: job, Path: l.files.path(v.name), Interloper: v.interloper}
	if h := v.holder; h != nil {
		rec := h.rec
		s.Holder, s.FencingToken, s.Foreign, s.Corrupt = &rec, h.token, h.foreign, h.corrupt
		if !h.corrupt {
			s.HeldFor, s.SinceBeat = now.Sub(h.created), now.Sub(h.heartbeat)
			s.StaleSince = h.staleSince()
		}
	}
	return s
}

// List returns every lock that is not free: the ledger's and foreign lock
// files in the locks directory, ordered by name. A lock whose file cannot
// be read is listed from the locks table alone, with its Problem, and
// does not stop the others.
func (l *Ledger) List(ctx context.Context) ([]*LockStatus, error) {
	rows, err := loadRows(ctx, l.db)
	if err != nil {
		return nil, err
	}
	byName := map[string]*row{}
	for _, r := range rows {
		byName[r.name] = r
	}
	entries, err := l.files.entries()
	if err != nil && l.files.broken == nil {
		return nil, err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || strings.HasPrefix(e.Name(), ".") || events.ValidateLockName(name) != nil {
			continue
		}
		if _, seen := byName[name]; !seen {
			byName[name] = nil
		}
	}
	now := l.now().UTC()
	var out []*LockStatus
	for _, name := range sortedKeys(byName) {
		v, err := l.inspect(name, byName[name])
		if err != nil {
			s := l.status(interpret(name, byName[name], fileState{}, fileState{}), now)
			if s.State == events.StateFree && l.files.broken != nil {
				continue // the directory's problem is reported once, by Open
			}
			s.Problem = err.Error()
			out = append(out, s)
			continue
		}
		if s := l.status(v, now); s.State != events.StateFree {
			out = append(out, s)
		}
	}
	return out, nil
}

func seconds(d time.Duration) float64 {
	return float64(d.Milliseconds()) / 1000
}
