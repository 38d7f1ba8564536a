package ledger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
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

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
	// Waiting marks every attempt of a caller that waits: a stale lock
	// ends the wait at once, so its refusal is recorded on any attempt.
	Waiting bool
	// Targets are extra lock files in other tools' formats to project.
	Targets []events.Target
	// MaxAge, when set, makes a holder older than it count as stale (and is
	// BSO's zombie age for BSO files).
	MaxAge time.Duration
	// Reclaim takes the lock over from another process that holds it under
	// the same request id (lock_stolen, reason reclaimed). Without it, a
	// request id held by another live process is refused as held: a request
	// id names one holder, not whoever repeats it.
	Reclaim bool
	// Shared asks for a shared holding: it coexists with other shared
	// holders and excludes exclusive ones (see shared.go).
	Shared bool
	// Limit makes the lock a semaphore of Limit slots (implies Shared);
	// every holder must pass the same Limit.
	Limit int64
}

func (r *AcquireRequest) validate() error {
	if err := events.ValidateLockName(r.Lock); err != nil {
		return err
	}
	if err := r.validateShared(); err != nil {
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
	// PreviousPIDStart is the start time of the previous holder's process
	// (see ProcessStart), which tells it from a later process with its pid.
	PreviousPIDStart string
	// NotAwaited says why a superseded job cannot be awaited from here
	// (see Lease.AwaitSuperseded); "" when it can.
	NotAwaited string
	// Already: the request held the lock before this call; nothing was written.
	Already bool
	// Mode is events.ModeShared for a shared holding ("" exclusive), and
	// Limit its semaphore's slots (0: none).
	Mode  string
	Limit int64
	// sent is when the call that took the lock began (monotonic clock): the
	// ledger's heartbeat time for it is no earlier, so a lease deadline
	// counted from it never ends after the lock's TTL does.
	sent time.Time
	// at is the time the decision was made at, by the store's clock: the
	// clock the record's heartbeat time was read from.
	at time.Time
}

// stamped sets a's send time.
func stamped(a *Acquisition, sent time.Time, err error) (*Acquisition, error) {
	if a != nil {
		a.sent = sent
	}
	return a, err
}

// TryAcquire makes one attempt at a lock by the state rules: free is taken,
// dead is stolen (holder_dead), stale is stolen only with Force
// (stale_lock_forced), held is refused with *HeldError, stale without Force
// with *StaleError.
func (l *Ledger) TryAcquire(ctx context.Context, req AcquireRequest) (*Acquisition, error) {
	sent := time.Now()
	if err := l.prepareAcquire(&req); err != nil {
		return nil, err
	}
	id := req.Identity
	var out *Acquisition
	err := l.write(ctx, req.Lock, func(w *writeTx) (error, error) {
		if req.isShared() {
			a, outcome, err := w.tryAcquireShared(req, nil)
			out = a
			return outcome, err
		}
		h, err := w.effectiveHolder(req)
		if err != nil {
			return nil, err
		}
		if w.sameRequest(h, id) {
			if w.sameProcess(h, id) {
				out = &Acquisition{Lock: req.Lock, RequestID: id.RequestID, FencingToken: h.token, Seq: w.v.row.updatedSeq,
					Record: h.rec, Already: true, at: w.now}
				return nil, nil
			}
			if req.Reclaim {
				a, err := w.take(req, h, events.ReasonReclaimed, reclaimNote(h, id))
				out = a
				return nil, err
			}
		}
		if handled, outcome, err := w.sharedBeside(req, h); handled || err != nil {
			return outcome, err
		}
		state, job := judge(h, w.now, l.host, l.probe, req.MaxAge)
		switch state {
		case events.StateFree:
			if sh, err := loadShared(ctx, w.q, req.Lock); err != nil || len(sh) > 0 {
				if err != nil {
					return nil, err
				}
				a, outcome, err := w.exclusiveOverShared(req, sh, nil)
				out = a
				return outcome, err
			}
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
				Corrupt: h.corrupt, Waited: req.Waited, JobPIDs: job, SameRequest: w.sameRequest(h, req.Identity)})
		}
	})
	return stamped(out, sent, err)
}

// sameRequest: the ledger's holder holds the lock under the caller's request id.
func (w *writeTx) sameRequest(h *holding, id Identity) bool {
	return h != nil && !h.foreign && h.rec.RequestID == id.RequestID
}

// sameProcess: the caller's holder process is the holding's own (same
// host, pid and process start time), so a repeated acquire is idempotent.
func (w *writeTx) sameProcess(h *holding, id Identity) bool {
	if h.rec.HostID != w.l.host.ID || h.rec.PID != id.PID {
		return false
	}
	if h.bootID != "" && w.l.host.BootID != "" && h.bootID != w.l.host.BootID {
		return false
	}
	_, start := w.l.probe.Probe(id.PID)
	return h.pidStart == "" || start == "" || start == h.pidStart
}

func reclaimNote(h *holding, id Identity) string {
	return fmt.Sprintf("request %s reclaimed by pid %d from pid %d on %s", id.RequestID, id.PID, h.rec.PID, h.rec.HostID)
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
	if _, err := w.supersede(req.Identity, req.MaxAge); err != nil {
		return nil, err
	}
	if h := w.v.holder; h != nil && !h.foreign {
		return h, nil
	}
	t, err := w.foreignTarget(req)
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

// blocked records acquire_blocked when the attempt gives up (the last
// attempt, or a waiter meeting a stale lock) and reports outcome.
func (w *writeTx) blocked(req AcquireRequest, h *holding, state string, outcome error) (error, error) {
	if !req.RecordBlocked && !(req.Waiting && state == events.StateStale) {
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
	if prev != nil && prev.foreign && prev.target != "" && !slices.ContainsFunc(req.Targets, func(t events.Target) bool { return t.Path == prev.target }) {
		// Taking over another tool's file at a path the lock remembers: the
		// ledger's file replaces it there, and the path stays the lock's.
		req.Targets = append(slices.Clip(req.Targets), events.Target{Format: prev.targetFormat, Path: prev.target})
	}
	h := w.l.newHolding(req, w.now, token)
	var j *os.File
	if prev == nil || prev.target != "" {
		// Free, or taking over another tool's file at a target path: the
		// primary path has no file to replace.
		j, err = w.l.files.Place(req.Lock, h.file)
	} else {
		j, err = w.l.files.Replace(req.Lock, h.file)
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
		acq.Note = note // a steal that found the lock free
		ev, err = w.append(events.LockAcquired, req.Identity, &acq)
	} else {
		out.Stolen, out.Reason, out.Previous, out.PreviousHash = true, reason, &prev.rec, fileHash(prev.file)
		out.PreviousPIDStart = prev.pidStart
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

// Heartbeat renews a lock held by id.RequestID. A heartbeat by a request
// that held the lock and had it taken away records heartbeat_failed with
// lock_lost and returns a *NotHolderError wrapping ErrLost; one by a request
// that never held it, or released it itself, is a mistake of the caller,
// not a loss: recorded as action_refused, a *NotHolderError wrapping
// ErrNotHolder.
func (l *Ledger) Heartbeat(ctx context.Context, lock string, id Identity) (*Acquisition, error) {
	return l.heartbeat(ctx, lock, id, 0, 0)
}

// heartbeat renews; priorFailures counts the caller's failed attempts just
// before this one, recorded if this one finds the lock lost. A non-zero
// token renews only the holding with that fencing token: a lease whose
// request id was reclaimed by another process has lost its lock.
func (l *Ledger) heartbeat(ctx context.Context, lock string, id Identity, priorFailures int, token int64) (*Acquisition, error) {
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
		if _, err := w.supersede(id, 0); err != nil {
			return nil, err
		}
		h := w.v.holder
		if h == nil || h.foreign || h.rec.RequestID != id.RequestID || token != 0 && h.token != token {
			if s, err := w.sharedHolderOf(lock, id.RequestID); err != nil || s != nil && (token == 0 || s.token == token) {
				if err != nil {
					return nil, err
				}
				out, err = w.heartbeatShared(s, id)
				return nil, err
			}
			past, err := pastHoldingOf(ctx, w.q, lock, id.RequestID)
			if err != nil {
				return nil, err
			}
			nh := &NotHolderError{Lock: lock, RequestID: id.RequestID, Lost: past.lost(), ReleasedSeq: past.releasedSeq}
			if h != nil {
				nh.Holder, nh.Corrupt = &h.rec, h.corrupt
			}
			if !nh.Lost {
				return w.refuse(events.ActionHeartbeat, id, h, nh)
			}
			if _, err := w.append(events.HeartbeatFailed, id, &events.HeartbeatFailedPayload{
				ConsecutiveFailures: priorFailures + 1, Error: nh.Error(), LockLost: true}); err != nil {
				return nil, err
			}
			return nh, nil
		}
		renewed := *h
		renewed.heartbeat = w.now
		renewed.rec.LastHeartbeatAt = events.FormatLockTime(w.now)
		renewed.file = renewed.rec.File()
		if !w.v.interloper && !bytes.Equal(renewed.file, h.file) {
			j, err := l.files.Replace(lock, renewed.file)
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
	// Result is success, failure or cancelled; "" is failure with a
	// non-zero ExitCode, else success.
	Result      string
	FailureStep string
	ExitCode    *int
	// Force releases a lock held by someone else, recording forced: true.
	// With a RequestID it is a compare-and-release: the lock is released
	// only while that request holds it, and refused (*NotHolderError) when
	// another does.
	Force bool
	// Note is the operator's reason for a forced release.
	Note string
	// FencingToken, when set, releases only the holding with that token: a
	// request id reclaimed by another process is no longer the caller's.
	FencingToken int64
}

// ReleaseOutcome says what a release did: freed a holder's lock, or found
// nothing to release.
type ReleaseOutcome struct {
	Lock string
	// Released: lock_released was recorded at Seq with Result; Forced when
	// it was another request's lock (ReleasedRequestID).
	Released          bool
	Seq               int64
	Result            string
	Forced            bool
	ReleasedRequestID string
	// When nothing was released: ReleasedSeq is the request's own earlier
	// release (0 when it never held the lock, as with Force on a free
	// lock); State and Holder are the lock as the release found it.
	ReleasedSeq int64
	State       string
	Holder      *events.Record
}

// Release frees a lock held by req.RequestID. A request that released the
// lock already gets an outcome with Released false (nothing to release),
// as does Force on a free lock. A lock held by another request, or lost
// by this one, is refused with *NotHolderError unless Force, and the
// refusal recorded as action_refused.
func (l *Ledger) Release(ctx context.Context, req ReleaseRequest) (*ReleaseOutcome, error) {
	if err := events.ValidateLockName(req.Lock); err != nil {
		return nil, err
	}
	if req.RequestID == "" && !req.Force {
		return nil, events.Invalid("request id", "", "is required to release (or use --force)")
	}
	if err := validText("failure step", req.FailureStep, 256, true); err != nil {
		return nil, err
	}
	if err := validText("reason", req.Note, 1024, true); err != nil {
		return nil, err
	}
	if req.ExitCode != nil && (*req.ExitCode < 0 || *req.ExitCode > 255) {
		return nil, events.Invalid("exit code", fmt.Sprint(*req.ExitCode), "must be 0-255")
	}
	if req.Result == "" {
		// A job that exited non-zero failed, whether or not the caller said so.
		req.Result = events.ResultSuccess
		if req.ExitCode != nil && *req.ExitCode != 0 {
			req.Result = events.ResultFailure
		}
	}
	switch req.Result {
	case events.ResultSuccess, events.ResultFailure, events.ResultCancelled:
	default:
		return nil, events.Invalid("result", req.Result, "must be success, failure or cancelled")
	}
	id, err := l.resolve(req.Identity, l.now())
	if err != nil {
		return nil, err
	}
	var out *ReleaseOutcome
	err = l.write(ctx, req.Lock, func(w *writeTx) (error, error) {
		if _, err := w.supersede(id, 0); err != nil {
			return nil, err
		}
		h := w.v.holder
		mine := h != nil && !h.foreign && h.rec.RequestID == id.RequestID && (req.FencingToken == 0 || h.token == req.FencingToken)
		if !mine && (h == nil || h.foreign) && req.RequestID != "" {
			// Another tool's file beside shared holders blocks acquirers, not
			// a shared holder's release of its own slot.
			s, err := w.sharedHolderOf(req.Lock, id.RequestID)
			if err != nil {
				return nil, err
			}
			if s != nil && (req.FencingToken == 0 || s.token == req.FencingToken) {
				out, err = w.releaseShared(s, id, req)
				return nil, err
			}
		}
		if !mine && h == nil && req.Force && req.RequestID == "" {
			if sh, err := loadShared(ctx, w.q, req.Lock); err != nil || len(sh) > 0 {
				if err != nil {
					return nil, err
				}
				return nil, events.Invalid("request id", "", fmt.Sprintf(
					"is required to release one of the %d shared holders of %s (--force alone names no holder)", len(sh), req.Lock))
			}
		}
		if req.Force && req.RequestID != "" {
			// An operator's release of the named holding: recorded as
			// forced, and never of another holder that took the lock since.
			named := h != nil && h.corrupt == nil && h.rec.RequestID == id.RequestID &&
				(req.FencingToken == 0 || h.token == req.FencingToken)
			if h != nil && !named {
				past, err := pastHoldingOf(ctx, w.q, req.Lock, id.RequestID)
				if err != nil {
					return nil, err
				}
				nh := &NotHolderError{Lock: req.Lock, RequestID: id.RequestID, Holder: &h.rec, Corrupt: h.corrupt,
					Lost: past.lost(), ReleasedSeq: past.releasedSeq}
				return w.refuse(events.ActionRelease, id, h, nh)
			}
			mine = false
		}
		if !mine && (h == nil || !req.Force) {
			past, err := pastHoldingOf(ctx, w.q, req.Lock, id.RequestID)
			if err != nil {
				return nil, err
			}
			if req.Force || past.releasedSeq > 0 {
				out = &ReleaseOutcome{Lock: req.Lock, ReleasedSeq: past.releasedSeq, State: events.StateFree}
				if h != nil {
					rec := h.rec
					out.State, _ = judge(h, w.now, l.host, l.probe, 0)
					out.Holder = &rec
				}
				return nil, nil
			}
			nh := &NotHolderError{Lock: req.Lock, RequestID: id.RequestID, Lost: past.lost()}
			if h != nil {
				nh.Holder, nh.Corrupt = &h.rec, h.corrupt
			}
			return w.refuse(events.ActionRelease, id, h, nh)
		}
		if err := l.files.Remove(req.Lock, h.file); err != nil {
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
			FailureStep: req.FailureStep, ExitCode: req.ExitCode, Forced: !mine, FencingToken: h.token, Note: req.Note}
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
		out = &ReleaseOutcome{Lock: req.Lock, Released: true, Seq: ev.Seq, Result: req.Result, Forced: !mine,
			ReleasedRequestID: p.ReleasedRequestID, State: events.StateFree}
		if h.foreign {
			return nil, nil // the ledger never held it: no row to free
		}
		return nil, w.saveFree(ev.Seq)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
// with Active. A free lock is simply acquired. An active holder without
// Active is refused (an error wrapping *HeldError) and recorded as
// action_refused.
func (l *Ledger) Steal(ctx context.Context, req StealRequest) (*Acquisition, error) {
	sent := time.Now()
	if err := validText("reason", req.Note, 1024, true); err != nil {
		return nil, err
	}
	if err := l.prepareAcquire(&req.AcquireRequest); err != nil {
		return nil, err
	}
	id := req.Identity
	var out *Acquisition
	err := l.write(ctx, req.Lock, func(w *writeTx) (error, error) {
		if req.isShared() {
			a, outcome, err := w.tryAcquireShared(req.AcquireRequest, &req)
			out = a
			return outcome, err
		}
		h, err := w.effectiveHolder(req.AcquireRequest)
		if err != nil {
			return nil, err
		}
		if w.sameRequest(h, id) {
			if w.sameProcess(h, id) {
				out = &Acquisition{Lock: req.Lock, RequestID: id.RequestID, FencingToken: h.token, Record: h.rec, Already: true, at: w.now}
				return nil, nil
			}
			if req.Reclaim {
				a, err := w.take(req.AcquireRequest, h, events.ReasonReclaimed, reclaimNote(h, id))
				out = a
				return nil, err
			}
		}
		if handled, outcome, err := w.sharedBeside(req.AcquireRequest, h); handled || err != nil {
			return outcome, err
		}
		state, _ := judge(h, w.now, l.host, l.probe, req.MaxAge)
		var reason string
		switch state {
		case events.StateFree:
			if sh, err := loadShared(ctx, w.q, req.Lock); err != nil || len(sh) > 0 {
				if err != nil {
					return nil, err
				}
				a, outcome, err := w.exclusiveOverShared(req.AcquireRequest, sh, &req)
				out = a
				return outcome, err
			}
			a, err := w.take(req.AcquireRequest, nil, "", req.Note)
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
				held := &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign, Corrupt: h.corrupt}
				return w.refuse(events.ActionSteal, id, h, fmt.Errorf("%w; the holder is alive: take it anyway with steal --active", held))
			}
		}
		if h.foreign && reason != events.ReasonForcedActive && reason != events.ReasonSuperseded {
			reason = events.ReasonForeignLock
		}
		note, notAwaited := req.Note, ""
		if req.Supersede {
			note, notAwaited = l.supersedeNote(h, note)
		}
		a, err := w.take(req.AcquireRequest, h, reason, note)
		if a != nil {
			a.NotAwaited = notAwaited
		}
		out = a
		return nil, err
	})
	return stamped(out, sent, err)
}

// LockStatus is one lock's state at an instant.
type LockStatus struct {
	Name         string
	State        string
	JobPIDs      []int // processes of the holder's job still running here, its own process gone
	Holder       *events.Record
	FencingToken int64
	Foreign      bool
	Corrupt      *UnreadableFile // the holder is an unreadable lock file (Holder is a placeholder)
	Interloper   bool            // a foreign file sits at the path of a lock the ledger holds
	// Unreadable is that file when it is no lock at all (project puts the
	// ledger's file back in its place).
	Unreadable *UnreadableFile
	// Superseded is the ledger's own holder when another tool's lock at one
	// of its paths has taken the lock (recorded by the next writer).
	Superseded *events.Record
	HeldFor    time.Duration
	SinceBeat  time.Duration
	StaleSince time.Time
	Path       string
	// Problem: the lock's file could not be read (a symlink, a directory,
	// no permission, or no locks directory); the rest is the locks
	// table's alone.
	Problem string

	// HolderFormat is the format of the other tool's file that holds the
	// lock, when it superseded the ledger's holder ("" otherwise).
	HolderFormat string

	// Mode is events.ModeShared when shared holders hold the lock (Shared,
	// ordered by request id; Holder is then the stalest in the lock's
	// state), Limit their semaphore's slots (0: none).
	Mode   string
	Limit  int64
	Shared []SharedHolder
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
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil, err
	}
	s := l.status(v, now)
	if s.Holder == nil {
		sh, err := loadShared(ctx, l.db, lock)
		if err != nil {
			return nil, err
		}
		l.addShared(s, sh, now)
	}
	return s, nil
}

func (l *Ledger) status(v *view, now time.Time) *LockStatus {
	var superseded *events.Record
	var format string
	if sup, err := l.supersededBy(v, now, 0); err == nil && sup != nil {
		// What the next writer will record: the other tool's lock holds it.
		rec := v.holder.rec
		superseded, format = &rec, sup.format
		v = &view{name: v.name, row: v.row, file: v.file, holder: sup.h}
	}
	if v.holder == nil {
		// Another tool's lock at a path the lock remembers holds it.
		if f, err := l.foreignAt(v.name, v, nil, now, 0); err == nil && f != nil {
			v = &view{name: v.name, row: v.row, file: v.file, holder: f}
		}
	}
	state, job := judge(v.holder, now, l.host, l.probe, 0)
	s := &LockStatus{Name: v.name, State: state, JobPIDs: job, Path: l.files.Path(v.name), Interloper: v.interloper,
		Superseded: superseded, HolderFormat: format}
	if v.interloper {
		if _, err := ParseLockFile(v.file.Data); err != nil {
			s.Unreadable = unreadableFile(v.file)
		}
	}
	if h := v.holder; h != nil {
		rec := h.rec
		s.Holder, s.FencingToken, s.Foreign, s.Corrupt = &rec, h.token, h.foreign, h.corrupt
		if h.corrupt == nil {
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
	entries, err := l.files.Entries()
	if err != nil && l.files.Broken() == nil {
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
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil, err
	}
	all, err := loadAllShared(ctx, l.db)
	if err != nil {
		return nil, err
	}
	shared := map[string][]*sharedHolding{}
	for _, s := range all {
		shared[s.rec.LockName] = append(shared[s.rec.LockName], s)
		if _, seen := byName[s.rec.LockName]; !seen {
			byName[s.rec.LockName] = nil
		}
	}
	var out []*LockStatus
	for _, name := range sortedKeys(byName) {
		v, err := l.inspect(name, byName[name])
		if err != nil {
			s := l.status(interpret(name, byName[name], lockfile.State{}, lockfile.State{}), now)
			if s.State == events.StateFree && l.files.Broken() != nil {
				continue // the directory's problem is reported once, by Open
			}
			s.Problem = err.Error()
			out = append(out, s)
			continue
		}
		s := l.status(v, now)
		l.addShared(s, shared[name], now)
		if s.State != events.StateFree {
			out = append(out, s)
		}
	}
	return out, nil
}

func seconds(d time.Duration) float64 {
	return float64(d.Milliseconds()) / 1000
}
