package events

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/lockledger/lockledger/internal/termtext"
)

// LockVersion is the only lock-file version this package writes.
const LockVersion = "v1"

// LockTimeFormat is the lock file's time format (tower-fleet v1: RFC 3339 UTC seconds).
const LockTimeFormat = "2006-01-02T15:04:05Z"

// Record is the tower-fleet v1 lock record, the content of ROOT/locks/NAME.lock.
// Field order is the order of the specification and of the file.
type Record struct {
	LockVersion     string            `json:"lock_version"`
	LockName        string            `json:"lock_name"`
	RequestID       string            `json:"request_id"`
	Actor           string            `json:"actor"`
	Intent          string            `json:"intent"`
	IntentVersion   string            `json:"intent_version"`
	HostID          string            `json:"host_id"`
	PID             int               `json:"pid"`
	CreatedAt       string            `json:"created_at"`
	LastHeartbeatAt string            `json:"last_heartbeat_at"`
	TTLSeconds      int64             `json:"ttl_seconds"`
	Metadata        map[string]string `json:"metadata"`
}

// StaleAfter is the instant a holding of r whose last heartbeat was at
// heartbeat turns stale: its TTL later. It is the one staleness rule, used
// by the decisions (ledger/state.go) and by the fold of the log (replay).
func (r *Record) StaleAfter(heartbeat time.Time) time.Time {
	return heartbeat.Add(time.Duration(r.TTLSeconds) * time.Second)
}

// FormatLockTime renders t in the lock file's format.
func FormatLockTime(t time.Time) string { return t.UTC().Format(LockTimeFormat) }

// File renders the record exactly as it is written to disk: two-space
// indented JSON in specification order with a trailing newline, the shape jq
// itself prints.
func (r Record) File() []byte {
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	b, err := encodeWith(fileEncoders, r)
	if err != nil {
		panic(err) // a Record of strings and ints always encodes
	}
	return b
}

// LockFileHash is "sha256:<hex>" of a lock file's bytes as they were on
// disk (Record.File for the ledger's own holders, the other tool's bytes
// for another tool's file): what lock_stolen's previous_lock_hash carries.
func LockFileHash(file []byte) string {
	sum := sha256.Sum256(file)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HeartbeatTime parses last_heartbeat_at.
func (r Record) HeartbeatTime() (time.Time, error) { return ParseTime(r.LastHeartbeatAt) }

// CreatedTime parses created_at.
func (r Record) CreatedTime() (time.Time, error) { return ParseTime(r.CreatedAt) }

// Holder is the short description of a holder carried by acquire_blocked
// and by the lock_blocked / lock_stale error objects.
type Holder struct {
	RequestID       string `json:"request_id"`
	Actor           string `json:"actor"`
	Intent          string `json:"intent,omitempty"`
	HostID          string `json:"host_id"`
	PID             int    `json:"pid"`
	CreatedAt       string `json:"created_at"`
	LastHeartbeatAt string `json:"last_heartbeat_at"`
	// UID is the uid of the process that acquired the holding, where the
	// event that records the holder knows it.
	UID *int `json:"uid,omitempty"`
}

// HolderOf summarises a record.
func HolderOf(r Record) Holder {
	return Holder{RequestID: r.RequestID, Actor: r.Actor, Intent: r.Intent, HostID: r.HostID, PID: r.PID,
		CreatedAt: r.CreatedAt, LastHeartbeatAt: r.LastHeartbeatAt}
}

// UnreadableFile is a file at a lock's path that does not parse as a lock:
// what it is (where, how big, when it last changed), recorded in place of
// a holder, since none can be read from it.
type UnreadableFile struct {
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
	// Modified is the file's modification time, RFC 3339 UTC seconds.
	Modified string `json:"modified"`
}

// String is how the file is shown wherever a holder would be.
func (u *UnreadableFile) String() string {
	return termtext.Sprintf("unreadable lock file at %s (%d bytes, modified %s)", u.Path, u.SizeBytes, u.Modified)
}
