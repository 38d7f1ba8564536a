package replay

import (
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// decodeFast decodes a body into an Event exactly as
// json.Unmarshal(body, &Event{}) does, for bodies in the shape the ledger
// writes: one JSON object whose members are known fields, each once, with
// strings free of escapes, integers in range and no nulls. For anything
// else it reports false and the caller falls back to json.Unmarshal, which
// handles every case (unknown or case-folded keys, duplicates merging into
// maps and pointers, nulls, type errors). FuzzDecodeFast and
// TestDecodeFastMatchesUnmarshal hold it equal to json.Unmarshal; the
// package comment says which bench row keeps it. Keys are
// looked up in the schema's generated fields (schema.EventFieldOf and the
// like), so a field renamed in a schema file breaks this switch at compile
// time; TestDecodeFastTakesEverySchemaField finds one it does not decode.
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
	return decodeFastString(unsafe.String(unsafe.SliceData(body), len(body)), ev)
}

// decodeFastString is decodeFastInto for a body held as a string.
func decodeFastString(body string, ev *Event) bool {
	if len(body) == 0 {
		return false
	}
	d := fastDecoder{s: body}
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
func once(seen *[2]uint64, f uint) bool {
	w, bit := &seen[f/64], uint64(1)<<(f%64)
	if *w&bit != 0 {
		return false
	}
	*w |= bit
	return true
}

// osUserBox holds an event's uid and user: one allocation for both pointers.
type osUserBox struct {
	uid  int
	user string
}

func (d *fastDecoder) event(ev *Event) bool {
	var seen [2]uint64
	var box *osUserBox
	osUser := func() *osUserBox {
		if box == nil {
			box = &osUserBox{}
		}
		return box
	}
	return d.members(func(key string) bool {
		f, ok := schema.EventFieldOf(key)
		if !ok || !once(&seen, uint(f)) {
			return false // unknown, only a case-insensitive match, or repeated
		}
		switch f {
		case schema.EventEventID:
			return d.setStr(&ev.EventID)
		case schema.EventSeq:
			return d.setInt64(&ev.Seq)
		case schema.EventType:
			var t string
			ok := d.setStr(&t)
			ev.Type = events.Type(t)
			return ok
		case schema.EventSchemaVersion:
			return d.setInt(&ev.SchemaVersion)
		case schema.EventAt:
			return d.setStr(&ev.At)
		case schema.EventLockName:
			return d.setStr(&ev.LockName)
		case schema.EventRequestID:
			return d.setStr(&ev.RequestID)
		case schema.EventActor:
			return d.setStr(&ev.Actor)
		case schema.EventHostID:
			return d.setStr(&ev.HostID)
		case schema.EventPID:
			return d.setInt(&ev.PID)
		case schema.EventUID:
			ev.UID = &osUser().uid
			return d.setInt(ev.UID)
		case schema.EventUser:
			ev.User = &osUser().user
			return d.setStr(ev.User)
		case schema.EventTTLSeconds:
			return d.setInt64(&ev.TTLSeconds)
		case schema.EventIntent:
			return d.setStr(&ev.Intent)
		case schema.EventIntentVersion:
			return d.setStr(&ev.IntentVersion)
		case schema.EventFencingToken:
			return d.setInt64(&ev.FencingToken)
		case schema.EventMetadata:
			return d.metadata(&ev.Metadata)
		case schema.EventPIDStart:
			return d.setStr(&ev.PIDStart)
		case schema.EventBootID:
			return d.setStr(&ev.BootID)
		case schema.EventTargets:
			return d.targets(&ev.Targets)
		case schema.EventPreviousLock:
			ev.PreviousLock = &events.Record{}
			return d.record(ev.PreviousLock)
		case schema.EventPreviousLockHash:
			return d.setStr(&ev.PreviousLockHash)
		case schema.EventReason:
			return d.setStr(&ev.Reason)
		case schema.EventNote:
			return d.setStr(&ev.Note)
		case schema.EventKey:
			return d.setStr(&ev.Key)
		case schema.EventRole:
			return d.setStr(&ev.Role)
		case schema.EventStatement:
			return d.setStr(&ev.Statement)
		case schema.EventHeldDurationSeconds:
			return d.setFloat(&ev.HeldDurationSeconds)
		case schema.EventResult:
			return d.setStr(&ev.Result)
		case schema.EventFailureStep:
			return d.setStr(&ev.FailureStep)
		case schema.EventExitCode:
			ev.ExitCode = new(int)
			return d.setInt(ev.ExitCode)
		case schema.EventForced:
			return d.setBool(&ev.Forced)
		case schema.EventRun:
			return d.setBool(&ev.Run)
		case schema.EventReleasedRequestID:
			return d.setStr(&ev.ReleasedRequestID)
		case schema.EventConsecutiveFailures:
			return d.setInt(&ev.ConsecutiveFailures)
		case schema.EventError:
			return d.setStr(&ev.Error)
		case schema.EventLockLost:
			return d.setBool(&ev.LockLost)
		case schema.EventHeldBy:
			ev.HeldBy = &events.Holder{}
			return d.holder(ev.HeldBy)
		case schema.EventRecordedBy:
			ev.RecordedBy = &events.Caller{}
			return d.caller(ev.RecordedBy)
		case schema.EventUnreadableFile:
			ev.UnreadableFile = &events.UnreadableFile{}
			return d.unreadableFile(ev.UnreadableFile)
		case schema.EventState:
			return d.setStr(&ev.State)
		case schema.EventWaitedSeconds:
			return d.setFloat(&ev.WaitedSeconds)
		case schema.EventPIDNS:
			ev.PIDNS = new(int64)
			return d.setInt64(ev.PIDNS)
		case schema.EventReleaseSecretSha256:
			return d.setStr(&ev.ReleaseSecretSHA256)
		case schema.EventAuthorizedBy:
			return d.setStr(&ev.AuthorizedBy)
		case schema.EventForeign:
			return d.setBool(&ev.Foreign)
		case schema.EventSupersededBy:
			ev.DisplacedBy = &events.Holder{}
			return d.holder(ev.DisplacedBy)
		case schema.EventSupersededByFormat:
			return d.setStr(&ev.DisplacedByFormat)
		case schema.EventSupersededByPath:
			return d.setStr(&ev.DisplacedByPath)
		case schema.EventAction:
			return d.setStr(&ev.Action)
		case schema.EventChanges:
			return d.strings(&ev.Changes)
		case schema.EventMovedAside:
			return d.setStr(&ev.MovedAside)
		case schema.EventBrokenChainAccepted:
			return d.setBool(&ev.BrokenChainAccepted)
		case schema.EventFirstBadSeq:
			return d.setInt64(&ev.FirstBadSeq)
		case schema.EventRollbackAccepted:
			ev.RollbackAccepted = &events.Pin{}
			return d.pin(ev.RollbackAccepted)
		case schema.EventJobRequestID:
			return d.setStr(&ev.JobRequestID)
		case schema.EventPIDs:
			return d.ints(&ev.PIDs)
		case schema.EventSince:
			return d.setStr(&ev.Since)
		case schema.EventUntil:
			return d.setStr(&ev.Until)
		case schema.EventQueuedSeq:
			return d.setInt64(&ev.QueuedSeq)
		case schema.EventQueuedAt:
			return d.setStr(&ev.QueuedAt)
		case schema.EventFirstSeq:
			return d.setInt64(&ev.FirstSeq)
		case schema.EventLastSeq:
			return d.setInt64(&ev.LastSeq)
		case schema.EventEvents:
			return d.setInt64(&ev.Events)
		case schema.EventFormat:
			return d.setStr(&ev.Format)
		case schema.EventDestination:
			return d.setStr(&ev.Destination)
		case schema.EventProblems:
			return d.setInt(&ev.Problems)
		case schema.EventHeadHash:
			return d.setStr(&ev.HeadHash)
		case schema.EventFile:
			return d.setStr(&ev.File)
		case schema.EventLocks:
			return d.setInt(&ev.Locks)
		case schema.EventRowsChanged:
			return d.setInt(&ev.RowsChanged)
		case schema.EventFilesChanged:
			return d.setInt(&ev.FilesChanged)
		case schema.EventMode:
			return d.setStr(&ev.Mode)
		case schema.EventLimit:
			return d.setInt64(&ev.Limit)
		case schema.EventFence:
			return d.setStr(&ev.Fence)
		case schema.EventResource:
			return d.setStr(&ev.Resource)
		case schema.EventStaleToken:
			return d.setInt64(&ev.StaleToken)
		case schema.EventCurrentToken:
			return d.setInt64(&ev.CurrentToken)
		}
		return false // a field the fast path does not decode
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
