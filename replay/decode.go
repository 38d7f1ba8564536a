package replay

import (
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/lockledger/lockledger/events"
)

// decodeFast decodes a body into an Event exactly as
// json.Unmarshal(body, &Event{}) does, for bodies in the shape the ledger
// writes: one JSON object whose members are known fields, each once, with
// strings free of escapes, integers in range and no nulls. For anything
// else it reports false and the caller falls back to json.Unmarshal, which
// handles every case (unknown or case-folded keys, duplicates merging into
// maps and pointers, nulls, type errors). FuzzDecodeFast and
// TestDecodeFastMatchesUnmarshal hold it equal to json.Unmarshal.
//
// The event's strings are substrings of body itself, not copies: body must
// not change while the event is in use (verify's row bodies never change).
func decodeFast(body []byte) (*Event, bool) {
	ev := &Event{}
	if !decodeFastInto(body, ev) {
		return nil, false
	}
	return ev, true
}

// decodeFastInto is decodeFast into a zero Event; after false, ev holds
// debris and must be zeroed before any other use.
func decodeFastInto(body []byte, ev *Event) bool {
	if len(body) == 0 {
		return false
	}
	d := fastDecoder{s: unsafe.String(unsafe.SliceData(body), len(body))}
	if !d.event(ev) {
		return false
	}
	d.ws()
	return d.i == len(d.s)
}

type fastDecoder struct {
	s string
	i int
}

func (d *fastDecoder) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// members calls member for each member of the object at d.i (white space
// skipped), with d.i at the value; member must consume it.
func (d *fastDecoder) members(member func(key string) bool) bool {
	d.ws()
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		return false
	}
	d.i++
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return true
	}
	for {
		key, ok := d.str()
		if !ok {
			return false
		}
		d.ws()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return false
		}
		d.i++
		d.ws()
		if !member(key) {
			return false
		}
		d.ws()
		if d.i >= len(d.s) {
			return false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.ws()
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string without escapes or control characters whose bytes
// are valid UTF-8: then the decoded string is the raw content.
func (d *fastDecoder) str() (string, bool) {
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	ascii := true
	i := start
	// Eight bytes at a time while none may need attention.
	for i+8 <= len(d.s) && !mayBeSpecial(load64(d.s, i)) {
		i += 8
	}
	for ; i < len(d.s); i++ {
		switch c := d.s[i]; {
		case c == '"':
			v := d.s[start:i]
			if !ascii && !utf8.ValidString(v) {
				return "", false
			}
			d.i = i + 1
			return v, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

// integer reads a JSON integer literal (no fraction, no exponent) that fits
// in bits, as encoding/json's strconv.ParseInt does.
func (d *fastDecoder) integer(bits int) (int64, bool) {
	i := d.i
	neg := false
	if i < len(d.s) && d.s[i] == '-' {
		neg = true
		i++
	}
	start := i
	for i < len(d.s) && d.s[i] >= '0' && d.s[i] <= '9' {
		i++
	}
	n := i - start
	if n == 0 || n > 1 && d.s[start] == '0' || n > 19 {
		return 0, false
	}
	if i < len(d.s) && (d.s[i] == '.' || d.s[i] == 'e' || d.s[i] == 'E') {
		return 0, false
	}
	var u uint64
	for _, c := range []byte(d.s[start:i]) {
		u = u*10 + uint64(c-'0') // 19 digits fit in a uint64
	}
	limit := uint64(1)<<(bits-1) - 1
	if neg {
		limit++
	}
	if u > limit {
		return 0, false
	}
	d.i = i
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

// float reads a JSON number as encoding/json does into a float64.
func (d *fastDecoder) float() (float64, bool) {
	i := d.i
	if i < len(d.s) && d.s[i] == '-' {
		i++
	}
	digits := func() int {
		s := i
		for i < len(d.s) && d.s[i] >= '0' && d.s[i] <= '9' {
			i++
		}
		return i - s
	}
	start := i
	if n := digits(); n == 0 || n > 1 && d.s[start] == '0' {
		return 0, false
	}
	if i < len(d.s) && d.s[i] == '.' {
		i++
		if digits() == 0 {
			return 0, false
		}
	}
	if i < len(d.s) && (d.s[i] == 'e' || d.s[i] == 'E') {
		i++
		if i < len(d.s) && (d.s[i] == '+' || d.s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(d.s[d.i:i], 64)
	if err != nil {
		return 0, false
	}
	d.i = i
	return f, true
}

func (d *fastDecoder) boolean() (bool, bool) {
	switch {
	case len(d.s)-d.i >= 4 && d.s[d.i:d.i+4] == "true":
		d.i += 4
		return true, true
	case len(d.s)-d.i >= 5 && d.s[d.i:d.i+5] == "false":
		d.i += 5
		return false, true
	}
	return false, false
}

func (d *fastDecoder) setStr(p *string) bool {
	v, ok := d.str()
	*p = v
	return ok
}

func (d *fastDecoder) setInt(p *int) bool {
	v, ok := d.integer(strconv.IntSize)
	*p = int(v)
	return ok
}

func (d *fastDecoder) setInt64(p *int64) bool {
	v, ok := d.integer(64)
	*p = v
	return ok
}

func (d *fastDecoder) setFloat(p *float64) bool {
	v, ok := d.float()
	*p = v
	return ok
}

func (d *fastDecoder) setBool(p *bool) bool {
	v, ok := d.boolean()
	*p = v
	return ok
}

// once marks field f seen: a second occurrence is left to json.Unmarshal.
func once(seen *uint64, f uint) bool {
	if *seen&(1<<f) != 0 {
		return false
	}
	*seen |= 1 << f
	return true
}

// osUserBox holds an event's uid and user: one allocation for both pointers.
type osUserBox struct {
	uid  int
	user string
}

func (d *fastDecoder) event(ev *Event) bool {
	var seen uint64
	var box *osUserBox
	osUser := func() *osUserBox {
		if box == nil {
			box = &osUserBox{}
		}
		return box
	}
	return d.members(func(key string) bool {
		switch key {
		case "event_id":
			return once(&seen, 0) && d.setStr(&ev.EventID)
		case "seq":
			return once(&seen, 1) && d.setInt64(&ev.Seq)
		case "type":
			var t string
			ok := once(&seen, 2) && d.setStr(&t)
			ev.Type = events.Type(t)
			return ok
		case "schema_version":
			return once(&seen, 3) && d.setInt(&ev.SchemaVersion)
		case "at":
			return once(&seen, 4) && d.setStr(&ev.At)
		case "lock_name":
			return once(&seen, 5) && d.setStr(&ev.LockName)
		case "request_id":
			return once(&seen, 6) && d.setStr(&ev.RequestID)
		case "actor":
			return once(&seen, 7) && d.setStr(&ev.Actor)
		case "host_id":
			return once(&seen, 8) && d.setStr(&ev.HostID)
		case "pid":
			return once(&seen, 9) && d.setInt(&ev.PID)
		case "uid":
			if !once(&seen, 45) {
				return false
			}
			ev.UID = &osUser().uid
			return d.setInt(ev.UID)
		case "user":
			if !once(&seen, 46) {
				return false
			}
			ev.User = &osUser().user
			return d.setStr(ev.User)
		case "ttl_seconds":
			return once(&seen, 10) && d.setInt64(&ev.TTLSeconds)
		case "intent":
			return once(&seen, 11) && d.setStr(&ev.Intent)
		case "intent_version":
			return once(&seen, 12) && d.setStr(&ev.IntentVersion)
		case "fencing_token":
			return once(&seen, 13) && d.setInt64(&ev.FencingToken)
		case "metadata":
			return once(&seen, 14) && d.metadata(&ev.Metadata)
		case "pid_start":
			return once(&seen, 15) && d.setStr(&ev.PIDStart)
		case "boot_id":
			return once(&seen, 16) && d.setStr(&ev.BootID)
		case "targets":
			return once(&seen, 17) && d.targets(&ev.Targets)
		case "previous_lock":
			if !once(&seen, 18) {
				return false
			}
			ev.PreviousLock = &events.Record{}
			return d.record(ev.PreviousLock)
		case "previous_lock_hash":
			return once(&seen, 19) && d.setStr(&ev.PreviousLockHash)
		case "reason":
			return once(&seen, 20) && d.setStr(&ev.Reason)
		case "note":
			return once(&seen, 21) && d.setStr(&ev.Note)
		case "held_duration_seconds":
			return once(&seen, 22) && d.setFloat(&ev.HeldDurationSeconds)
		case "result":
			return once(&seen, 23) && d.setStr(&ev.Result)
		case "failure_step":
			return once(&seen, 24) && d.setStr(&ev.FailureStep)
		case "exit_code":
			if !once(&seen, 25) {
				return false
			}
			ev.ExitCode = new(int)
			return d.setInt(ev.ExitCode)
		case "forced":
			return once(&seen, 26) && d.setBool(&ev.Forced)
		case "released_request_id":
			return once(&seen, 27) && d.setStr(&ev.ReleasedRequestID)
		case "consecutive_failures":
			return once(&seen, 28) && d.setInt(&ev.ConsecutiveFailures)
		case "error":
			return once(&seen, 29) && d.setStr(&ev.Error)
		case "lock_lost":
			return once(&seen, 30) && d.setBool(&ev.LockLost)
		case "held_by":
			if !once(&seen, 31) {
				return false
			}
			ev.HeldBy = &events.Holder{}
			return d.holder(ev.HeldBy)
		case "state":
			return once(&seen, 32) && d.setStr(&ev.State)
		case "waited_seconds":
			return once(&seen, 33) && d.setFloat(&ev.WaitedSeconds)
		case "foreign":
			return once(&seen, 34) && d.setBool(&ev.Foreign)
		case "superseded_by":
			if !once(&seen, 35) {
				return false
			}
			ev.DisplacedBy = &events.Holder{}
			return d.holder(ev.DisplacedBy)
		case "superseded_by_format":
			return once(&seen, 36) && d.setStr(&ev.DisplacedByFormat)
		case "superseded_by_path":
			return once(&seen, 37) && d.setStr(&ev.DisplacedByPath)
		case "action":
			return once(&seen, 38) && d.setStr(&ev.Action)
		case "changes":
			return once(&seen, 39) && d.strings(&ev.Changes)
		case "moved_aside":
			return once(&seen, 40) && d.setStr(&ev.MovedAside)
		case "broken_chain_accepted":
			return once(&seen, 41) && d.setBool(&ev.BrokenChainAccepted)
		case "first_bad_seq":
			return once(&seen, 42) && d.setInt64(&ev.FirstBadSeq)
		case "job_request_id":
			return once(&seen, 43) && d.setStr(&ev.JobRequestID)
		case "pids":
			return once(&seen, 44) && d.ints(&ev.PIDs)
		case "since":
			return once(&seen, 47) && d.setStr(&ev.Since)
		case "until":
			return once(&seen, 48) && d.setStr(&ev.Until)
		case "first_seq":
			return once(&seen, 49) && d.setInt64(&ev.FirstSeq)
		case "last_seq":
			return once(&seen, 50) && d.setInt64(&ev.LastSeq)
		case "events":
			return once(&seen, 51) && d.setInt64(&ev.Events)
		case "format":
			return once(&seen, 52) && d.setStr(&ev.Format)
		case "destination":
			return once(&seen, 53) && d.setStr(&ev.Destination)
		case "problems":
			return once(&seen, 54) && d.setInt(&ev.Problems)
		case "head_hash":
			return once(&seen, 55) && d.setStr(&ev.HeadHash)
		case "file":
			return once(&seen, 56) && d.setStr(&ev.File)
		case "locks":
			return once(&seen, 57) && d.setInt(&ev.Locks)
		case "rows_changed":
			return once(&seen, 58) && d.setInt(&ev.RowsChanged)
		case "files_changed":
			return once(&seen, 59) && d.setInt(&ev.FilesChanged)
		case "mode":
			return once(&seen, 60) && d.setStr(&ev.Mode)
		case "limit":
			return once(&seen, 61) && d.setInt64(&ev.Limit)
		}
		return false // unknown, or only a case-insensitive match
	})
}

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
		var seen uint64
		if !d.members(func(key string) bool {
			switch key {
			case "format":
				return once(&seen, 0) && d.setStr(&t.Format)
			case "path":
				return once(&seen, 1) && d.setStr(&t.Path)
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
	var seen uint64
	return d.members(func(key string) bool {
		switch key {
		case "lock_version":
			return once(&seen, 0) && d.setStr(&r.LockVersion)
		case "lock_name":
			return once(&seen, 1) && d.setStr(&r.LockName)
		case "request_id":
			return once(&seen, 2) && d.setStr(&r.RequestID)
		case "actor":
			return once(&seen, 3) && d.setStr(&r.Actor)
		case "intent":
			return once(&seen, 4) && d.setStr(&r.Intent)
		case "intent_version":
			return once(&seen, 5) && d.setStr(&r.IntentVersion)
		case "host_id":
			return once(&seen, 6) && d.setStr(&r.HostID)
		case "pid":
			return once(&seen, 7) && d.setInt(&r.PID)
		case "created_at":
			return once(&seen, 8) && d.setStr(&r.CreatedAt)
		case "last_heartbeat_at":
			return once(&seen, 9) && d.setStr(&r.LastHeartbeatAt)
		case "ttl_seconds":
			return once(&seen, 10) && d.setInt64(&r.TTLSeconds)
		case "metadata":
			return once(&seen, 11) && d.metadata(&r.Metadata)
		}
		return false
	})
}

func (d *fastDecoder) holder(h *events.Holder) bool {
	var seen uint64
	return d.members(func(key string) bool {
		switch key {
		case "request_id":
			return once(&seen, 0) && d.setStr(&h.RequestID)
		case "actor":
			return once(&seen, 1) && d.setStr(&h.Actor)
		case "intent":
			return once(&seen, 2) && d.setStr(&h.Intent)
		case "host_id":
			return once(&seen, 3) && d.setStr(&h.HostID)
		case "pid":
			return once(&seen, 4) && d.setInt(&h.PID)
		case "created_at":
			return once(&seen, 5) && d.setStr(&h.CreatedAt)
		case "last_heartbeat_at":
			return once(&seen, 6) && d.setStr(&h.LastHeartbeatAt)
		}
		return false
	})
}

// load64 reads eight bytes of s from i, little-endian (one load).
func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// mayBeSpecial reports whether any of the eight bytes of w may be '"',
// '\\', a control character or non-ASCII. It never misses one; it may
// report one that is not there only beside one that is.
func mayBeSpecial(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := w ^ (lo * '"')
	e := w ^ (lo * '\\')
	return ((w-lo*0x20)|(q-lo)|(e-lo)|w)&hi != 0
}
