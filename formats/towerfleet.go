package formats

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// towerFleet is tower-fleet/lock/v1, lockledger's own lock file:
// events.Record rendered by Record.File (two-space JSON in spec order, the
// shape jq prints, trailing newline), times RFC 3339 UTC seconds.
//
//	lock_version       "v1" (constant)
//	lock_name          Lock
//	request_id         RequestID
//	actor              Actor
//	intent             Intent
//	intent_version     IntentVersion
//	host_id            HostID
//	pid                PID
//	created_at         CreatedAt
//	last_heartbeat_at  HeartbeatAt (CreatedAt when zero)
//	ttl_seconds        TTL (whole seconds, at least 1)
//	metadata           Metadata ({} when nil; non-string values parse as their JSON text)
//
// Judge: stale when now - last_heartbeat_at > ttl_seconds, or when
// last_heartbeat_at lies more than MaxClockSkew ahead of now; the pid is
// informational only (pids are recycled, and a holder in another pid
// namespace shares the host name), so the file is never judged dead by it;
// a file that fails the v1 schema is held, fail safe (never trusted as free).
type towerFleet struct{}

func (towerFleet) Name() string { return NameTowerFleet }

// ToRecord converts a holder to the v1 record Render writes.
func ToRecord(h Holder) events.Record {
	hb := h.HeartbeatAt
	if hb.IsZero() {
		hb = h.CreatedAt
	}
	md := h.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return events.Record{
		LockVersion: events.LockVersion, LockName: h.Lock, RequestID: h.RequestID, Actor: h.Actor,
		Intent: h.Intent, IntentVersion: h.IntentVersion, HostID: h.HostID, PID: h.PID,
		CreatedAt: events.FormatLockTime(h.CreatedAt), LastHeartbeatAt: events.FormatLockTime(hb),
		TTLSeconds: int64(h.TTL / time.Second), Metadata: md,
	}
}

// FromRecord converts a v1 record to a holder. Unparseable times are zero.
func FromRecord(r events.Record) Holder {
	created, _ := events.ParseTime(r.CreatedAt)
	hb, _ := events.ParseTime(r.LastHeartbeatAt)
	md := r.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return Holder{Lock: r.LockName, RequestID: r.RequestID, Actor: r.Actor, Intent: r.Intent,
		IntentVersion: r.IntentVersion, HostID: r.HostID, PID: r.PID, CreatedAt: created, HeartbeatAt: hb,
		TTL: time.Duration(r.TTLSeconds) * time.Second, Metadata: md}
}

func (f towerFleet) Render(h Holder) ([]byte, error) {
	if err := renderTime(f.Name(), "created_at", h.CreatedAt); err != nil {
		return nil, err
	}
	if !h.HeartbeatAt.IsZero() {
		if err := renderTime(f.Name(), "last_heartbeat_at", h.HeartbeatAt); err != nil {
			return nil, err
		}
	}
	if h.TTL < time.Second {
		return nil, fmt.Errorf("%s: ttl_seconds must be at least 1 (TTL %s)", f.Name(), h.TTL)
	}
	out := ToRecord(h).File()
	if err := schema.Validate(schema.LockFile, out); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return out, nil
}

func (f towerFleet) Parse(data []byte) (Holder, error) {
	if err := checkSize(f.Name(), data); err != nil {
		return Holder{}, err
	}
	rec, err := ParseRecord(data)
	if err != nil {
		return Holder{}, malformed(f.Name(), "%v", err)
	}
	if _, err := events.ParseTime(rec.CreatedAt); err != nil {
		return Holder{}, malformed(f.Name(), "created_at: %v", err)
	}
	if _, err := events.ParseTime(rec.LastHeartbeatAt); err != nil {
		return Holder{}, malformed(f.Name(), "last_heartbeat_at: %v", err)
	}
	if rec.TTLSeconds > int64(maxTTL/time.Second) {
		return Holder{}, malformed(f.Name(), "ttl_seconds %d is out of range", rec.TTLSeconds)
	}
	return FromRecord(rec), nil
}

// ParseRecord parses a lock file in the v1 layout, which every tower-fleet
// tool and the ledger write. The file must satisfy the v1 schema; metadata
// values that are not strings are kept as their JSON text. Both the file
// and the record rendered again in the v1 layout (Record.File) must fit in
// maxFile, so that what is accepted can be written back and read again.
func ParseRecord(data []byte) (events.Record, error) {
	if len(data) > maxFile {
		return events.Record{}, fmt.Errorf("lock file larger than %d bytes", maxFile)
	}
	if err := schema.Validate(schema.LockFile, data); err != nil {
		return events.Record{}, err
	}
	var raw struct {
		events.Record
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return events.Record{}, err
	}
	rec := raw.Record
	rec.Metadata = map[string]string{}
	for k, v := range raw.Metadata {
		var s string
		if json.Unmarshal(v, &s) == nil {
			rec.Metadata[k] = s
		} else {
			rec.Metadata[k] = strings.TrimSpace(string(v))
		}
	}
	if n := len(rec.File()); n > maxFile {
		return events.Record{}, fmt.Errorf("lock file larger than %d bytes once written in the v1 layout (%d bytes, from %d)", maxFile, n, len(data))
	}
	return rec, nil
}

// maxTTL keeps TTL arithmetic far from overflow.
const maxTTL = 100 * 365 * 24 * time.Hour

// DefaultTTL is tower-fleet's default, used by Judge when a
// holder carries no TTL.
const DefaultTTL = 900 * time.Second

func (f towerFleet) Judge(h Holder, parseErr error, now time.Time, env Env) Verdict {
	if parseErr != nil {
		return failSafe(f.Name(), parseErr, "a lock file that fails validation is never trusted as free")
	}
	// The pid is informational only (pids are recycled, and a
	// holder in another pid namespace shares the host name); heartbeat
	// expiry is the authority.
	ttl := h.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	hb := h.HeartbeatAt
	if hb.IsZero() {
		hb = h.CreatedAt
	}
	if v, ok := skewVerdict("last heartbeat", hb, now); ok {
		return v
	}
	if age := now.Sub(hb); age > ttl {
		return Verdict{State: events.StateStale, Reason: ReasonTTLExpired,
			Detail: fmt.Sprintf("last heartbeat %s ago, older than ttl_seconds %d", age.Round(time.Second), int64(ttl/time.Second))}
	}
	if v, ok := maxAgeVerdict(h, now, env.MaxAge); ok {
		return v
	}
	return held(ReasonActive, "heartbeat within ttl_seconds")
}
