package replay

// The objects nested in an event's body (metadata, lists, targets, the
// lock record, holders, callers, unreadable files, pins), each decoded by
// the fast decoder of decode.go.

import (
	"strconv"

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

// elements calls elem for each element of the array at d.i (white space
// skipped), with d.i at the element; elem must consume it. A null is left
// to json.Unmarshal (it keeps the slice nil).
func (d *fastDecoder) elements(elem func() bool) bool {
	d.ws()
	if d.i >= len(d.s) || d.s[d.i] != '[' {
		return false
	}
	d.i++
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return true
	}
	for {
		d.ws()
		if !elem() {
			return false
		}
		d.ws()
		if d.i >= len(d.s) {
			return false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// strings: an array of strings into a new slice (encoding/json makes an
// empty one for []).
func (d *fastDecoder) strings(p *[]string) bool {
	v := []string{}
	ok := d.elements(func() bool {
		s, ok := d.str()
		v = append(v, s)
		return ok
	})
	*p = v
	return ok
}

// ints: an array of integers that fit in an int.
func (d *fastDecoder) ints(p *[]int) bool {
	v := []int{}
	ok := d.elements(func() bool {
		n, ok := d.integer(strconv.IntSize)
		v = append(v, int(n))
		return ok
	})
	*p = v
	return ok
}

func (d *fastDecoder) targets(p *[]events.Target) bool {
	ts := []events.Target{} // encoding/json: [] is an empty slice, not nil
	ok := d.elements(func() bool {
		var t events.Target
		var seen [2]uint64
		if !d.members(func(key string) bool {
			f, ok := schema.TargetsItemFieldOf(key)
			if !ok || !once(&seen, uint(f)) {
				return false
			}
			switch f {
			case schema.TargetsItemFormat:
				return d.setStr(&t.Format)
			case schema.TargetsItemPath:
				return d.setStr(&t.Path)
			}
			return false
		}) {
			return false
		}
		ts = append(ts, t)
		return true
	})
	if ok {
		*p = ts
	}
	return ok
}

func (d *fastDecoder) record(r *events.Record) bool {
	var seen [2]uint64
	return d.members(func(key string) bool {
		f, ok := schema.LockV1FieldOf(key)
		if !ok || !once(&seen, uint(f)) {
			return false
		}
		switch f {
		case schema.LockV1LockVersion:
			return d.setStr(&r.LockVersion)
		case schema.LockV1LockName:
			return d.setStr(&r.LockName)
		case schema.LockV1RequestID:
			return d.setStr(&r.RequestID)
		case schema.LockV1Actor:
			return d.setStr(&r.Actor)
		case schema.LockV1Intent:
			return d.setStr(&r.Intent)
		case schema.LockV1IntentVersion:
			return d.setStr(&r.IntentVersion)
		case schema.LockV1HostID:
			return d.setStr(&r.HostID)
		case schema.LockV1PID:
			return d.setInt(&r.PID)
		case schema.LockV1CreatedAt:
			return d.setStr(&r.CreatedAt)
		case schema.LockV1LastHeartbeatAt:
			return d.setStr(&r.LastHeartbeatAt)
		case schema.LockV1TTLSeconds:
			return d.setInt64(&r.TTLSeconds)
		case schema.LockV1Metadata:
			return d.metadata(&r.Metadata)
		}
		return false
	})
}

func (d *fastDecoder) holder(h *events.Holder) bool {
	var seen [2]uint64
	return d.members(func(key string) bool {
		f, ok := schema.HolderFieldOf(key)
		if !ok || !once(&seen, uint(f)) {
			return false
		}
		switch f {
		case schema.HolderRequestID:
			return d.setStr(&h.RequestID)
		case schema.HolderActor:
			return d.setStr(&h.Actor)
		case schema.HolderIntent:
			return d.setStr(&h.Intent)
		case schema.HolderHostID:
			return d.setStr(&h.HostID)
		case schema.HolderPID:
			return d.setInt(&h.PID)
		case schema.HolderCreatedAt:
			return d.setStr(&h.CreatedAt)
		case schema.HolderLastHeartbeatAt:
			return d.setStr(&h.LastHeartbeatAt)
		case schema.HolderUID:
			h.UID = new(int)
			return d.setInt(h.UID)
		}
		return false
	})
}

func (d *fastDecoder) caller(c *events.Caller) bool {
	var seen [2]uint64
	return d.members(func(key string) bool {
		f, ok := schema.CallerFieldOf(key)
		if !ok || !once(&seen, uint(f)) {
			return false
		}
		switch f {
		case schema.CallerActor:
			return d.setStr(&c.Actor)
		case schema.CallerHostID:
			return d.setStr(&c.HostID)
		case schema.CallerPID:
			return d.setInt(&c.PID)
		}
		return false
	})
}

func (d *fastDecoder) unreadableFile(u *events.UnreadableFile) bool {
	var seen [2]uint64
	return d.members(func(key string) bool {
		f, ok := schema.UnreadableFileFieldOf(key)
		if !ok || !once(&seen, uint(f)) {
			return false
		}
		switch f {
		case schema.UnreadableFilePath:
			return d.setStr(&u.Path)
		case schema.UnreadableFileSizeBytes:
			return d.setInt64(&u.SizeBytes)
		case schema.UnreadableFileModified:
			return d.setStr(&u.Modified)
		}
		return false
	})
}

func (d *fastDecoder) pin(p *events.Pin) bool {
	var seen [2]uint64
	return d.members(func(key string) bool {
		f, ok := schema.PinFieldOf(key)
		if !ok || !once(&seen, uint(f)) {
			return false
		}
		switch f {
		case schema.PinLedgerID:
			return d.setStr(&p.LedgerID)
		case schema.PinSeq:
			return d.setInt64(&p.Seq)
		case schema.PinHash:
			return d.setStr(&p.Hash)
		}
		return false
	})
}
