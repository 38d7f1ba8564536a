package replay

import (
	"strconv"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// decodeFastString decodes a body into ev (zero) exactly as
// json.Unmarshal(body, ev) does, for bodies in the shape the ledger
// writes: one JSON object whose members are known fields, each once, with
// strings free of escapes, integers in range and no nulls. For anything
// else it reports false (and ev holds debris, to be zeroed before any
// other use) and the caller falls back to json.Unmarshal, which handles
// every case (unknown or case-folded keys, duplicates merging into maps
// and pointers, nulls, type errors). FuzzDecodeFast and
// TestDecodeFastMatchesUnmarshal hold it equal to json.Unmarshal; the
// package comment says which bench row keeps it. Keys are looked up in
// the schema's generated fields (schema.EventFieldOf and the like), and
// decode_gen.go, generated from the schema files and the json tags of
// Event and its objects' types, names the Go field of each.
//
// The event's strings are substrings of body itself, not copies: body must
// not change while the event is in use (verify's row bodies never change).
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
	s   string
	i   int
	box *osUserBox
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

// list calls item for each item of the object or array (open, close) at
// d.i (white space skipped), with d.i at the item; item must consume it.
// Anything else, a null included, is left to json.Unmarshal (which keeps
// a slice nil).
func (d *fastDecoder) list(open, close byte, item func() bool) bool {
	d.ws()
	if d.i >= len(d.s) || d.s[d.i] != open {
		return false
	}
	d.i++
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == close {
		d.i++
		return true
	}
	for {
		d.ws()
		if !item() {
			return false
		}
		d.ws()
		if d.i >= len(d.s) {
			return false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case close:
			d.i++
			return true
		default:
			return false
		}
	}
}

// members calls member for each member of the object at d.i, with d.i at
// the value; member must consume it.
func (d *fastDecoder) members(member func(key string) bool) bool {
	return d.list('{', '}', func() bool {
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
		return member(key)
	})
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

// value decodes the value at d.i into p, a pointer to a field of an
// event or of an object in it, as encoding/json does: a pointer field
// gets a new value to point to.
func (d *fastDecoder) value(p any) (ok bool) {
	var n int64
	switch p := p.(type) {
	case *string:
		*p, ok = d.str()
	case *events.Type:
		*(*string)(p), ok = d.str()
	case *int:
		n, ok = d.integer(strconv.IntSize)
		*p = int(n)
	case **int:
		*p = new(int)
		return d.value(*p)
	case *int64:
		*p, ok = d.integer(64)
	case **int64:
		*p = new(int64)
		return d.value(*p)
	case *float64:
		*p, ok = d.float()
	case *bool:
		*p, ok = d.boolean()
	case *map[string]string:
		return d.metadata(p)
	case *[]string:
		return array(d, p, func(s *string) bool { return d.value(s) })
	case *[]int:
		return array(d, p, func(n *int) bool { return d.value(n) })
	case *[]events.Target:
		return array(d, p, func(t *events.Target) bool { return object(d, schema.TargetsItemFieldOf, targetFields[:], t) })
	case **events.Record:
		*p = &events.Record{}
		return object(d, schema.LockV1FieldOf, recordFields[:], *p)
	case **events.Holder:
		*p = &events.Holder{}
		return object(d, schema.HolderFieldOf, holderFields[:], *p)
	case **events.Caller:
		*p = &events.Caller{}
		return object(d, schema.CallerFieldOf, callerFields[:], *p)
	case **events.UnreadableFile:
		*p = &events.UnreadableFile{}
		return object(d, schema.UnreadableFileFieldOf, unreadableFileFields[:], *p)
	case **events.Pin:
		*p = &events.Pin{}
		return object(d, schema.PinFieldOf, pinFields[:], *p)
	}
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

func (d *fastDecoder) osUser() *osUserBox {
	if d.box == nil {
		d.box = &osUserBox{}
	}
	return d.box
}

// event decodes the members of an event's body, each into the field
// eventFields names (the uid and the user into one allocation); a key
// none names (unknown, only a case-insensitive match, or repeated) is left
// to json.Unmarshal.
func (d *fastDecoder) event(ev *Event) bool {
	var seen [2]uint64
	return d.members(func(key string) bool {
		f, ok := schema.EventFieldOf(key)
		switch {
		case !ok || !once(&seen, uint(f)):
			return false
		case f == schema.EventUID:
			ev.UID = &d.osUser().uid
			return d.value(ev.UID)
		case f == schema.EventUser:
			ev.User = &d.osUser().user
			return d.value(ev.User)
		}
		return d.value(eventFields[f](ev))
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
