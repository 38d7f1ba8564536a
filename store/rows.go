package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lockledger/lockledger/events"
)

// TargetsJSON is the targets column's value for targets.
func TargetsJSON(targets []events.Target) string {
	if targets == nil {
		targets = []events.Target{}
	}
	tj, err := json.Marshal(targets)
	if err != nil {
		return "[]" // strings only: always marshals
	}
	return string(tj)
}

// Diff names the columns of the locks row in which a and b differ.
func (a *Row) Diff(b *Row) []string {
	var d diff
	add := d.add
	add("request_id", a.RequestID == b.RequestID)
	add("host_id", a.HostID == b.HostID)
	add("fencing_token", a.FencingToken == b.FencingToken)
	add("updated_seq", a.UpdatedSeq == b.UpdatedSeq)
	add("file", bytes.Equal(a.File, b.File))
	add("targets", a.TargetsJSON() == b.TargetsJSON())
	return d
}

// diff names the columns found to differ.
type diff []string

func (d *diff) add(name string, same bool) {
	if !same {
		*d = append(*d, name)
	}
}

// Diff names the columns in which holder rows a and b differ, but for
// updated_seq, which a rebuilt shared row understates (replay's Lock.HolderRow).
func (a *HolderRow) Diff(b *HolderRow) []string {
	var d diff
	add := d.add
	add("exclusive", a.Exclusive == b.Exclusive)
	add("actor", a.Actor == b.Actor)
	add("intent", a.Intent == b.Intent)
	add("intent_version", a.IntentVersion == b.IntentVersion)
	add("host_id", a.HostID == b.HostID)
	add("pid", a.PID == b.PID)
	add("pid_start", a.PIDStart == b.PIDStart)
	add("boot_id", a.BootID == b.BootID)
	add("created_at", sameTime(a.CreatedAt, b.CreatedAt))
	add("heartbeat_at", sameTime(a.HeartbeatAt, b.HeartbeatAt))
	add("ttl_seconds", a.TTLSeconds == b.TTLSeconds)
	add("metadata", sameJSON(a.Metadata, b.Metadata))
	add("fencing_token", a.FencingToken == b.FencingToken)
	add("slot_limit", a.Limit == b.Limit)
	add("targets", a.TargetsJSON() == b.TargetsJSON())
	add("pid_ns", samePIDNS(a.PIDNS, b.PIDNS))
	return d
}

// sameTime: the same instant, however each is written.
func sameTime(a, b string) bool {
	ta, erra := events.ParseTime(a)
	tb, errb := events.ParseTime(b)
	if erra != nil || errb != nil {
		return a == b
	}
	return ta.Equal(tb)
}

// sameJSON: the same JSON object of strings, however each is written.
func sameJSON(a, b string) bool {
	var ma, mb map[string]string
	if json.Unmarshal([]byte(a), &ma) != nil || json.Unmarshal([]byte(b), &mb) != nil {
		return a == b
	}
	ja, _ := json.Marshal(ma)
	jb, _ := json.Marshal(mb)
	return bytes.Equal(ja, jb)
}

// DescribeRow says in words whom r holds the lock for ("no row" for nil).
func DescribeRow(r *Row) string {
	if r == nil {
		return "no row"
	}
	if r.Held {
		return fmt.Sprintf("held by request %s (actor %s, seq %d)", r.RequestID, r.Actor, r.UpdatedSeq)
	}
	return fmt.Sprintf("free (seq %d)", r.UpdatedSeq)
}

// SameVersion reports whether a and b (either nil when there is no row)
// are the same write of a lock's row.
func SameVersion(a, b *Row) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.UpdatedSeq == b.UpdatedSeq && a.Held == b.Held
}

// samePIDNS: both unrecorded, or both the same namespace.
func samePIDNS(a, b *int64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
