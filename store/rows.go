package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// RowFromReplay is the locks row package ledger's write path leaves for a
// lock replay folded: the holder's row for a held lock, the last holder's
// row with held = 0 for a free one. nil when the ledger never held the
// lock (no row).
func RowFromReplay(lk *replay.Lock) *Row {
	h := lk.Holder
	if h == nil {
		return nil
	}
	md, err := json.Marshal(h.Record.Metadata)
	if err != nil {
		md = []byte("{}") // a map of strings always marshals
	}
	targets := h.Targets
	if targets == nil {
		targets = []events.Target{}
	}
	tj, err := json.Marshal(targets)
	if err != nil {
		tj = []byte("[]") // strings only: always marshals
	}
	return &Row{Targets: string(tj),
		Name: lk.Name, Held: lk.Held, RequestID: h.Record.RequestID, Actor: h.Record.Actor, Intent: h.Record.Intent,
		IntentVersion: h.Record.IntentVersion, HostID: h.Record.HostID, PID: h.Record.PID, PIDStart: h.PIDStart,
		BootID: h.BootID, CreatedAt: events.FormatTime(h.Created), HeartbeatAt: events.FormatTime(h.Heartbeat),
		TTLSeconds: h.Record.TTLSeconds, Metadata: string(md), FencingToken: h.Token, UpdatedSeq: lk.UpdatedSeq,
		File: h.File(), PIDNS: h.PIDNS,
	}
}

// Diff names the columns in which a and b differ.
func (a *Row) Diff(b *Row) []string {
	var d []string
	add := func(name string, same bool) {
		if !same {
			d = append(d, name)
		}
	}
	add("held", a.Held == b.Held)
	add("request_id", a.RequestID == b.RequestID)
	add("actor", a.Actor == b.Actor)
	add("intent", a.Intent == b.Intent)
	add("intent_version", a.IntentVersion == b.IntentVersion)
	add("host_id", a.HostID == b.HostID)
	add("pid", a.PID == b.PID)
	add("pid_start", a.PIDStart == b.PIDStart)
	add("boot_id", a.BootID == b.BootID)
	add("created_at", a.CreatedAt == b.CreatedAt)
	add("heartbeat_at", a.HeartbeatAt == b.HeartbeatAt)
	add("ttl_seconds", a.TTLSeconds == b.TTLSeconds)
	add("metadata", a.Metadata == b.Metadata)
	add("fencing_token", a.FencingToken == b.FencingToken)
	add("updated_seq", a.UpdatedSeq == b.UpdatedSeq)
	add("file", bytes.Equal(a.File, b.File))
	add("targets", a.TargetsJSON() == b.TargetsJSON())
	add("pid_ns", samePIDNS(a.PIDNS, b.PIDNS))
	return d
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
