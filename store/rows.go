package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// RowFromReplay is the Row package ledger's write path leaves for a lock
// replay folded: its locks row, and for a held lock its exclusive
// holder's columns. nil when the ledger never held the lock exclusively
// (no row).
func RowFromReplay(lk *replay.Lock) *Row {
	h := lk.Holder
	if h == nil {
		return nil
	}
	r := &Row{Name: lk.Name, Held: lk.Held, RequestID: h.Record.RequestID, HostID: h.Record.HostID,
		FencingToken: h.Token, UpdatedSeq: lk.UpdatedSeq, File: h.File(), Targets: targetsJSON(h.Targets)}
	if lk.Held {
		x := HolderFromReplay(lk, h, true)
		r.Actor, r.Intent, r.IntentVersion, r.PID, r.PIDStart, r.BootID = x.Actor, x.Intent, x.IntentVersion, x.PID, x.PIDStart, x.BootID
		r.CreatedAt, r.HeartbeatAt, r.TTLSeconds, r.Metadata, r.PIDNS = x.CreatedAt, x.HeartbeatAt, x.TTLSeconds, x.Metadata, x.PIDNS
	}
	return r
}

// HolderFromReplay is the lock_holders row of h, a holder of lk that
// replay folded: lk's exclusive holder (slot limit 1, updated by the
// lock's last write) or one of its shared ones (lk's limit, updated as
// replay knows by its acquiring event: an understatement, which the
// truncation checks allow).
func HolderFromReplay(lk *replay.Lock, h *replay.Holder, exclusive bool) *HolderRow {
	md, err := json.Marshal(h.Record.Metadata)
	if err != nil {
		md = []byte("{}") // a map of strings always marshals
	}
	r := &HolderRow{Name: lk.Name, RequestID: h.Record.RequestID, Actor: h.Record.Actor, Intent: h.Record.Intent,
		IntentVersion: h.Record.IntentVersion, HostID: h.Record.HostID, PID: h.Record.PID, PIDStart: h.PIDStart,
		BootID: h.BootID, CreatedAt: events.FormatTime(h.Created), HeartbeatAt: events.FormatTime(h.Heartbeat),
		TTLSeconds: h.Record.TTLSeconds, Metadata: string(md), FencingToken: h.Token, Limit: lk.Limit,
		UpdatedSeq: h.Token, PIDNS: h.PIDNS, Targets: "[]"}
	if exclusive {
		r.Exclusive, r.Limit, r.UpdatedSeq, r.Targets = true, 1, lk.UpdatedSeq, targetsJSON(h.Targets)
	}
	return r
}

func targetsJSON(targets []events.Target) string {
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
	var d []string
	add := func(name string, same bool) {
		if !same {
			d = append(d, name)
		}
	}
	add("request_id", a.RequestID == b.RequestID)
	add("host_id", a.HostID == b.HostID)
	add("fencing_token", a.FencingToken == b.FencingToken)
	add("updated_seq", a.UpdatedSeq == b.UpdatedSeq)
	add("file", bytes.Equal(a.File, b.File))
	add("targets", a.TargetsJSON() == b.TargetsJSON())
	return d
}

// Diff names the columns in which holder rows a and b differ, but for
// updated_seq, which a rebuilt shared row understates (HolderFromReplay).
func (a *HolderRow) Diff(b *HolderRow) []string {
	var d []string
	add := func(name string, same bool) {
		if !same {
			d = append(d, name)
		}
	}
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
