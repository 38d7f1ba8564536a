package ledger

import (
	"fmt"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

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
	// Waited is how long the caller has waited so far (acquire_blocked and
	// lock_acquired record it).
	Waited time.Duration
	// WaitLeft is how much longer a waiting caller will wait: its first
	// blocked attempt queues it for that long (see queue.go).
	WaitLeft time.Duration
	// NoProcess: no process holds the lock (Identity.PID is ignored); it is
	// held while heartbeats arrive within the TTL and stale after, and any
	// process with the request id heartbeats and releases it.
	NoProcess bool
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
	// ReleaseSecret asks for a release secret: a random secret returned
	// in Acquisition.ReleaseSecret and nowhere else (the ledger records only
	// its SHA-256), with which a release is accepted from any uid
	// (ReleaseRequest.Secret).
	ReleaseSecret bool
	// Run records the holder (Identity.PID) as a lockledger run, which
	// releases the lock itself when its command ends: while that process
	// lives, a release without Force by any other process is refused.
	Run bool
}

// Validate checks a request as it stands, and is the one place the rules
// of an acquisition's fields live: the lock name, the TTL, the mode and
// the limit, what may be combined with what, intent, max age and
// metadata. A TTL of 0 is refused here: TryAcquire and Steal put
// DefaultTTL in it before they call Validate. Its errors are
// events.Invalid, naming the field and the rule.
func (r *AcquireRequest) Validate() error {
	if err := events.ValidateLockName(r.Lock); err != nil {
		return err
	}
	if r.Limit < 0 || r.Limit > schema.MaxLimit {
		return events.Invalid("limit", fmt.Sprint(r.Limit), LimitRule)
	}
	if r.isShared() && len(r.Targets) > 0 {
		return events.Invalid("file", r.Targets[0].Path,
			"must not be combined with --shared or --limit: other tools' lock files have one holder")
	}
	if r.isShared() && r.Reclaim {
		return events.Invalid("reclaim", "true", "must not be combined with --shared or --limit")
	}
	if err := validateTTL(r.TTL); err != nil {
		return err
	}
	if err := events.ValidText("intent", r.Intent, 256, true); err != nil {
		return err
	}
	if err := events.ValidText("intent version", r.IntentVersion, 256, true); err != nil {
		return err
	}
	if r.NoProcess && r.Run {
		return events.Invalid("holder", "none", "cannot be a run: a run's holder is its own process")
	}
	if r.NoProcess && len(r.Targets) > 0 {
		return events.Invalid("holder", "none", "cannot be combined with other tools' lock files (--file): they name a holder process")
	}
	if r.MaxAge < 0 {
		return events.Invalid("max age", r.MaxAge.String(), "must not be negative")
	}
	if len(r.Metadata) > MaxMetadataEntries {
		return events.Invalid("metadata", fmt.Sprintf("%d entries", len(r.Metadata)), fmt.Sprintf("must have at most %d entries", MaxMetadataEntries))
	}
	total := 0
	for k, v := range r.Metadata {
		if err := events.ValidText("metadata key", k, 128, false); err != nil {
			return err
		}
		if err := events.ValidText("metadata value of "+k, v, 1024, true); err != nil {
			return err
		}
		total += len(k) + len(v)
	}
	if total > MaxMetadataBytes {
		return events.Invalid("metadata", fmt.Sprintf("%d bytes", total), fmt.Sprintf("keys and values must total at most %d bytes", MaxMetadataBytes))
	}
	return nil
}

// LimitRule is the rule of a semaphore's limit (0 in a request: none).
var LimitRule = fmt.Sprintf("must be 1-%d", schema.MaxLimit)

// Bounds on an acquisition's metadata. With every other field at its own
// bound, they keep the lock file (where metadata is written out, escaped
// and indented) well under the size any reader accepts (lockfile.MaxSize):
// text is valid UTF-8 without control characters, so escaping at most
// doubles it.
const (
	MaxMetadataEntries = 64
	MaxMetadataBytes   = 16 << 10
)

// validateTTL checks a TTL: whole seconds, at least 1 s, at most MaxTTL.
func validateTTL(d time.Duration) error {
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
	// (see proc.Start), which tells it from a later process with its pid.
	PreviousPIDStart string
	// NotAwaited says why a superseded job cannot be awaited from here
	// (see AwaitSuperseded); "" when it can.
	NotAwaited string
	// StopPrevious: a stale holder here taken by force (see lease.StopTakenOver).
	StopPrevious bool
	// Already: the request held the lock before this call; nothing was written.
	Already bool
	// Mode is events.ModeShared for a shared holding ("" exclusive), and
	// Limit its semaphore's slots (0: none).
	Mode  string
	Limit int64
	// ReleaseSecret is the release secret AcquireRequest.ReleaseSecret asked
	// for: this value is the only copy. "" when none was asked for, and when
	// Already (the secret of an earlier acquisition is not kept).
	ReleaseSecret string
	// sent is when the call that took the lock began (monotonic clock): the
	// ledger's heartbeat time for it is no earlier, so a lease deadline
	// counted from it never ends after the lock's TTL does.
	sent time.Time
	// at is the time the decision was made at, by the store's clock: the
	// clock the record's heartbeat time was read from.
	at time.Time
}

// prepareAcquire validates an acquisition request and resolves who asks: the
// request id, the actor, and a holder pid that must be alive here.
func (l *Ledger) prepareAcquire(req *AcquireRequest) error {
	if req.TTL == 0 {
		req.TTL = DefaultTTL
	}
	if err := req.Validate(); err != nil {
		return err
	}
	id, err := l.resolve(req.Identity, l.now())
	if err != nil {
		return err
	}
	req.Identity = id
	if req.NoProcess {
		req.PID = 0
	} else if err := l.checkLocalPID(id.PID); err != nil {
		return err
	}
	return l.ValidateTargets(req.Targets)
}
