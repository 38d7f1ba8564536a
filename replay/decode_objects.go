package replay

// The objects nested in an event's body (metadata, lists, targets, the
// lock record, holders, callers, unreadable files, pins), each decoded by
// the fast decoder of decode.go.

import (
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// metadata: a JSON object of strings into a new map (encoding/json makes
// one even for {}); a repeated key overwrites, as in encoding/json.
func (d *fastDecoder) metadata(p *map[string]string) bool {
	m := map[string]string{}
	*p = m
	return d.members(func(key string) bool {
		v, ok := d.str()
		m[key] = v
		return ok
	})
}

// array decodes the array at d.i into a new slice (encoding/json makes
// an empty one for []), each element by elem.
func array[T any](d *fastDecoder, p *[]T, elem func(*T) bool) bool {
	v := []T{}
	ok := d.list('[', ']', func() bool {
		var x T
		ok := elem(&x)
		v = append(v, x)
		return ok
	})
	*p = v
	return ok
}

var targetFields = [schema.NumTargetsItemFields]func(t *events.Target) any{
	schema.TargetsItemFormat: func(t *events.Target) any { return &t.Format },
	schema.TargetsItemPath:   func(t *events.Target) any { return &t.Path },
}

var recordFields = [schema.NumLockV1Fields]func(r *events.Record) any{
	schema.LockV1LockVersion:     func(r *events.Record) any { return &r.LockVersion },
	schema.LockV1LockName:        func(r *events.Record) any { return &r.LockName },
	schema.LockV1RequestID:       func(r *events.Record) any { return &r.RequestID },
	schema.LockV1Actor:           func(r *events.Record) any { return &r.Actor },
	schema.LockV1Intent:          func(r *events.Record) any { return &r.Intent },
	schema.LockV1IntentVersion:   func(r *events.Record) any { return &r.IntentVersion },
	schema.LockV1HostID:          func(r *events.Record) any { return &r.HostID },
	schema.LockV1PID:             func(r *events.Record) any { return &r.PID },
	schema.LockV1CreatedAt:       func(r *events.Record) any { return &r.CreatedAt },
	schema.LockV1LastHeartbeatAt: func(r *events.Record) any { return &r.LastHeartbeatAt },
	schema.LockV1TTLSeconds:      func(r *events.Record) any { return &r.TTLSeconds },
	schema.LockV1Metadata:        func(r *events.Record) any { return &r.Metadata },
}

var holderFields = [schema.NumHolderFields]func(h *events.Holder) any{
	schema.HolderRequestID:       func(h *events.Holder) any { return &h.RequestID },
	schema.HolderActor:           func(h *events.Holder) any { return &h.Actor },
	schema.HolderIntent:          func(h *events.Holder) any { return &h.Intent },
	schema.HolderHostID:          func(h *events.Holder) any { return &h.HostID },
	schema.HolderPID:             func(h *events.Holder) any { return &h.PID },
	schema.HolderCreatedAt:       func(h *events.Holder) any { return &h.CreatedAt },
	schema.HolderLastHeartbeatAt: func(h *events.Holder) any { return &h.LastHeartbeatAt },
	schema.HolderUID:             func(h *events.Holder) any { return &h.UID },
}

var callerFields = [schema.NumCallerFields]func(c *events.Caller) any{
	schema.CallerActor:  func(c *events.Caller) any { return &c.Actor },
	schema.CallerHostID: func(c *events.Caller) any { return &c.HostID },
	schema.CallerPID:    func(c *events.Caller) any { return &c.PID },
}

var unreadableFileFields = [schema.NumUnreadableFileFields]func(u *events.UnreadableFile) any{
	schema.UnreadableFilePath:      func(u *events.UnreadableFile) any { return &u.Path },
	schema.UnreadableFileSizeBytes: func(u *events.UnreadableFile) any { return &u.SizeBytes },
	schema.UnreadableFileModified:  func(u *events.UnreadableFile) any { return &u.Modified },
}

var pinFields = [schema.NumPinFields]func(p *events.Pin) any{
	schema.PinLedgerID: func(p *events.Pin) any { return &p.LedgerID },
	schema.PinSeq:      func(p *events.Pin) any { return &p.Seq },
	schema.PinHash:     func(p *events.Pin) any { return &p.Hash },
}

// object decodes the members of the object at d.i into v, each into the
// field its entry of fields names (indexed by what fieldOf makes of its
// key); a key none names, or one repeated, is left to json.Unmarshal.
func object[F ~uint8, T any](d *fastDecoder, fieldOf func(string) (F, bool), fields []func(*T) any, v *T) bool {
	var seen [2]uint64
	return d.members(func(key string) bool {
		f, ok := fieldOf(key)
		return ok && once(&seen, uint(f)) && int(f) < len(fields) && fields[f] != nil && d.value(fields[f](v))
	})
}
