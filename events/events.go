// Package events defines the lock ledger's vocabulary: event types, the
// envelope every event carries, type-specific payloads, the v1 lock record,
// canonical JSON bodies and the hash chain. It does no I/O.
package events

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Type names one kind of event.
type Type string

const (
	LockAcquired    Type = "lock_acquired"
	LockHeartbeat   Type = "lock_heartbeat"
	LockStolen      Type = "lock_stolen"
	LockReleased    Type = "lock_released"
	HeartbeatFailed Type = "heartbeat_failed"
	AcquireBlocked  Type = "acquire_blocked"
	// ActionRefused: a release, steal or heartbeat the ledger refused
	// (not the holder, an active holder without --active). It changes no state.
	ActionRefused Type = "action_refused"
	// LockProjected: `project` changed a lock's projections (the locks row,
	// its lock file, a target file). It changes no state.
	LockProjected Type = "lock_projected"
	// JobProcesses: processes of a job that outlived its command (left the
	// process group) or a superseded job, stopped or left running. It
	// changes no state.
	JobProcesses Type = "job_processes"

	// The audit log's own access, recorded by the commands that read all of
	// it. These are ledger-wide: they name no lock (their bodies have no
	// lock_name, their lock_name column is ""), and change no state.

	// LedgerExported: `export` wrote events out of the ledger.
	LedgerExported Type = "ledger_exported"
	// LedgerVerified: `verify` checked the ledger, or an export of it.
	LedgerVerified Type = "ledger_verified"
	// LedgerProjected: `project` replayed the log to rebuild the
	// projections, or refused to; its lock_projected events say what
	// changed for each lock.
	LedgerProjected Type = "ledger_projected"
	// LedgerPruned: `prune` removed the events below a seq from the live
	// store once an archive of them verified against it.
	LedgerPruned Type = "ledger_pruned"
	// LedgerUnpruned: `unprune` put the events the last prune removed
	// back into the live store, from its archive.
	LedgerUnpruned Type = "ledger_unpruned"
	// SignerAdded: an owner of the ledger registered a key that signs its
	// checkpoints (signer add); SignerRemoved: one revoked it (signer
	// remove). Each carries the owner's signed statement of it.
	SignerAdded   Type = "signer_added"
	SignerRemoved Type = "signer_removed"

	// FenceRejected: a fence (package fence) refused a write whose
	// fencing token was below the resource's current one. It changes no
	// state.
	FenceRejected Type = "fence_rejected"
)

// Types and LedgerWide (types_gen.go) are generated from the schema files.

// Valid reports whether t is a known event type.
func (t Type) Valid() bool { return slices.Contains(Types, t) }

// SchemaVersion is written into every envelope.
const SchemaVersion = 1

// Steal reasons.
const (
	ReasonStaleForced  = "stale_lock_forced"
	ReasonHolderDead   = "holder_dead"
	ReasonForcedActive = "forced_active"
	ReasonForeignLock  = "foreign_lock"
	ReasonSuperseded   = "superseded"
	// ReasonReclaimed: the same request id taken up by another process
	// with --reclaim (the previous process of the request is the previous lock).
	ReasonReclaimed = "reclaimed"
)

// BlockedByQueue is acquire_blocked's reason when the lock was free (or its
// holder dead) but waiters queued before the caller come first.
const BlockedByQueue = "queue"

// WaiterTTL is how long a waiter's place in a lock's queue lasts without a
// renewal: an acquire_blocked with until keeps it at most this long after
// its at, whatever its until says. A waiter that died where no probe can
// tell (another host, another PID namespace) holds the line this long at
// most; a live one renews its place well within it.
const WaiterTTL = 15 * time.Second

// Holder modes (lock_acquired's, lock_stolen's and acquire_blocked's mode).
// An exclusive holder excludes everyone; shared holders coexist with each
// other (up to the lock's limit, when it has one) and exclude exclusive ones.
const (
	ModeExclusive = "exclusive" // the default, never written: no mode field
	ModeShared    = "shared"
)

// Refused actions (action_refused's action).
const (
	ActionRelease   = "release"
	ActionSteal     = "steal"
	ActionHeartbeat = "heartbeat"
)

// What happened to a job's processes (job_processes's action).
const (
	JobTerminated  = "terminated"   // they exited after TERM within the grace
	JobKilled      = "killed"       // KILL after the grace
	JobLeftRunning = "left_running" // --leave-running: recorded and left alone
)

// Results of the ledger-wide events (ledger_verified's and ledger_projected's result).
const (
	AuditOK      = "ok"      // verify found nothing wrong; project rebuilt the projections
	AuditFailed  = "failed"  // verify found problems
	AuditRefused = "refused" // project refused a damaged log
)

// Where ledger_exported's events went when not to a file.
const DestinationStdout = "stdout"

// Release results.
const (
	ResultSuccess   = "success"
	ResultFailure   = "failure"
	ResultCancelled = "cancelled"
	// ResultForced is a release by someone other than the holder (release
	// --force) that said nothing of how the holder's work ended.
	ResultForced = "forced"
)

// Lock states.
const (
	StateFree  = "free"
	StateHeld  = "held"
	StateStale = "stale"
	StateDead  = "dead"
)

// ErrInvalid is wrapped by every input-validation error, so callers can map
// it to "usage or invalid input" without reading the message.
var ErrInvalid = errors.New("invalid input")

// InvalidError names the field and the rule that it broke.
type InvalidError struct {
	Field string
	Value string
	Rule  string
}

func (e *InvalidError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Rule)
	}
	return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Rule)
}

func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Invalid builds an *InvalidError.
func Invalid(field, value, rule string) error {
	return &InvalidError{Field: field, Value: value, Rule: rule}
}

// LockNameRule is the lock_name pattern of the event schema, and
// RequestIDRule the rule quoted when a request id is refused.
const (
	LockNameRule  = "must match ^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$ (" + lockNameWords + ")"
	RequestIDRule = "must be 1-128 characters of A-Z a-z 0-9 _ . : -"
)

// lockNameWords is LockNameRule in words, quoted when a name is refused.
const lockNameWords = "1-128 of a-z 0-9 _ -, starting and ending with a letter or digit"

// ValidateLockName checks a lock name against LockNameRule, and says what
// is wrong in words. (By hand: a regexp compiled at init costs every
// process; FuzzValidateLockName holds it equal to the pattern.)
func ValidateLockName(name string) error {
	if why := lockNameProblem(name); why != "" {
		return Invalid("lock name", name, why+" (a lock name is "+lockNameWords+")")
	}
	return nil
}

// lockNameProblem is the check of LockNameRule: what keeps s from being a
// lock name, in words, or "" when it is one.
func lockNameProblem(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if strings.Contains(s, "/") {
		return pathProblem(s)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case lowerAlnum(c) || c == '_' || c == '-':
		case c >= 'A' && c <= 'Z':
			why := fmt.Sprintf("uppercase letters are not allowed: %q", rune(c))
			if lower := strings.ToLower(s); lockNameProblem(lower) == "" {
				why += fmt.Sprintf("; %q would do", lower)
			}
			return why
		default:
			if r, n := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || n > 1 {
				return fmt.Sprintf("%q is not allowed: only a-z 0-9 _ - are", r)
			}
			return fmt.Sprintf("byte '\\x%02x' (not UTF-8) is not allowed: only a-z 0-9 _ - are", c)
		}
	}
	switch {
	case !lowerAlnum(s[0]):
		return fmt.Sprintf("must start with a letter or digit, not %q", rune(s[0]))
	case !lowerAlnum(s[len(s)-1]):
		return fmt.Sprintf("must end with a letter or digit, not %q", rune(s[len(s)-1]))
	case len(s) > 128:
		return fmt.Sprintf("is %d characters long: longer than 128 characters is not allowed", len(s))
	}
	return ""
}

// pathProblem is lockNameProblem's words for a name with a '/': flock
// takes a file, and a lock here is a name, its file the ledger's own
// (ROOT/locks/NAME.lock). A path names its lock by its base (flock -w 5
// /var/lock/deploy.lock); a/b is a name with a separator.
func pathProblem(s string) string {
	why := "'/' is not allowed: only a-z 0-9 _ - are; a lock is a name, not a path (its lock file is ROOT/locks/NAME.lock)"
	name := strings.ReplaceAll(strings.ToLower(s), "/", "-")
	if s[0] == '/' || s[0] == '.' {
		name = strings.TrimSuffix(strings.ToLower(s[strings.LastIndexByte(s, '/')+1:]), ".lock")
	}
	if lockNameProblem(name) == "" {
		why += fmt.Sprintf("; %q would do", name)
	}
	return why
}

func lowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// IsLockName reports whether s matches LockNameRule's pattern (what
// lockNameProblem says in words), for the schema's validator too.
func IsLockName[T string | []byte](s T) bool {
	if len(s) < 1 || len(s) > 128 || !lowerAlnum(s[0]) || !lowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !lowerAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ValidateRequestID checks a request id.
func ValidateRequestID(id string) error {
	if !IsRequestID(id) {
		return Invalid("request id", id, RequestIDRule)
	}
	return nil
}

// IsRequestID reports whether s is a request id (RequestIDRule), for the
// schema's validator too.
func IsRequestID[T string | []byte](s T) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(lowerAlnum(c) || c >= 'A' && c <= 'Z' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// TimeFormat is the envelope's `at` format: RFC 3339, UTC, with fraction.
const TimeFormat = "2006-01-02T15:04:05.000000000Z"

// FormatTime renders t as an envelope time.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// ParseTime parses an envelope or lock-file time (any RFC 3339 form).
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}
