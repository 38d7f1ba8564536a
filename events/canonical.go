package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Canonical JSON is what encoding/json writes for the generic value its
// decoder (with UseNumber) reads from a document: object keys sorted
// (byte order) and each given once (its last value), no insignificant
// whitespace, no HTML escaping, numbers as written, and strings as the
// encoder writes them (escaping only '"', '\\', control characters,
// U+2028 and U+2029, with invalid UTF-8 read as U+FFFD). It is rendered
// here from the document's bytes in one pass, not through a map of it.

// BuildBody merges envelope and payload (a JSON object, or nil) into one
// flat object and renders it canonically.
func BuildBody(env Envelope, payload any) ([]byte, error) {
	e, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	var p []byte
	if payload != nil {
		if p, err = json.Marshal(payload); err != nil {
			return nil, err
		}
	}
	c := canonicalizer{buf: make([]byte, 0, 2*(len(e)+len(p)))}
	members, err := c.object(e)
	if err != nil {
		return nil, err
	}
	if p != nil {
		more, err := c.object(p)
		if err != nil {
			return nil, err
		}
		for _, m := range more {
			if _, dup := slices.BinarySearchFunc(members, c.key(m), func(m member, key []byte) int { return bytes.Compare(c.key(m), key) }); dup {
				return nil, fmt.Errorf("events: payload field %q collides with the envelope", c.key(m))
			}
		}
		members = c.sorted(append(members, more...))
	}
	return bytes.Clone(c.span(c.appendObject(members))), nil
}

// Canonical renders v as canonical JSON.
func Canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	c := canonicalizer{in: b, buf: make([]byte, 0, 2*len(b))}
	out, err := c.value()
	if err != nil {
		return nil, err
	}
	if c.skipSpace() < len(b) {
		return nil, errSyntax
	}
	return bytes.Clone(c.span(out)), nil
}

// canonicalizer reads a JSON document (valid: encoding/json wrote it)
// and renders its values canonically into buf, each value's rendering a
// span of it (spans, not slices: buf grows under them).
type canonicalizer struct {
	in  []byte
	i   int
	buf []byte
}

type span struct{ start, end int }

// member is one member of an object: its key (decoded) and its value
// (rendered), both in buf.
type member struct{ key, value span }

func (c *canonicalizer) span(s span) []byte  { return c.buf[s.start:s.end] }
func (c *canonicalizer) key(m member) []byte { return c.span(m.key) }

var (
	errSyntax    = errors.New("events: canonical: malformed JSON")
	errNotObject = errors.New("events: the payload is not a JSON object")
)

// object reads doc, one object (or null: none), into its members sorted
// by key, each key once.
func (c *canonicalizer) object(doc []byte) ([]member, error) {
	c.in, c.i = doc, 0
	c.skipSpace()
	var members []member
	var err error
	switch {
	case bytes.HasPrefix(doc[c.i:], []byte("null")):
		c.i += len("null")
	case c.i < len(doc) && doc[c.i] == '{':
		members, err = c.members()
	default:
		err = errNotObject
	}
	if err == nil && c.skipSpace() < len(doc) {
		err = errSyntax
	}
	return c.sorted(members), err
}

// sorted sorts ms by key, keeping of each key its last value, as a
// decoder into a map does.
func (c *canonicalizer) sorted(ms []member) []member {
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(c.key(a), c.key(b)) })
	out := ms[:0]
	for i, m := range ms {
		if i+1 < len(ms) && bytes.Equal(c.key(ms[i+1]), c.key(m)) {
			continue
		}
		out = append(out, m)
	}
	return out
}

func (c *canonicalizer) appendObject(ms []member) span {
	start := len(c.buf)
	c.buf = append(c.buf, '{')
	for i, m := range ms {
		if i > 0 {
			c.buf = append(c.buf, ',')
		}
		c.buf = appendString(c.buf, c.key(m))
		c.buf = append(c.buf, ':')
		c.buf = append(c.buf, c.span(m.value)...)
	}
	c.buf = append(c.buf, '}')
	return span{start, len(c.buf)}
}

func (c *canonicalizer) skipSpace() int {
	for c.i < len(c.in) && (c.in[c.i] == ' ' || c.in[c.i] == '\t' || c.in[c.i] == '\n' || c.in[c.i] == '\r') {
		c.i++
	}
	return c.i
}

// value renders the value at c.i.
func (c *canonicalizer) value() (span, error) {
	if c.skipSpace() >= len(c.in) {
		return span{}, errSyntax
	}
	switch c.in[c.i] {
	case '{':
		ms, err := c.members()
		if err != nil {
			return span{}, err
		}
		return c.appendObject(c.sorted(ms)), nil
	case '[':
		return c.array()
	case '"':
		key, err := c.str()
		if err != nil {
			return span{}, err
		}
		start := len(c.buf)
		c.buf = appendString(c.buf, c.span(key))
		return span{start, len(c.buf)}, nil
	}
	// A number or a literal: as written.
	start := c.i
	for c.i < len(c.in) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(c.in[c.i])) {
		c.i++
	}
	s := len(c.buf)
	c.buf = append(c.buf, c.in[start:c.i]...)
	return span{s, len(c.buf)}, nil
}

// array renders the array at c.i (its '[' there).
func (c *canonicalizer) array() (span, error) {
	c.i++
	var elems []span
	if c.skipSpace() < len(c.in) && c.in[c.i] == ']' {
		c.i++
	} else {
		for {
			v, err := c.value()
			if err != nil {
				return span{}, err
			}
			elems = append(elems, v)
			if c.skipSpace() >= len(c.in) {
				return span{}, errSyntax
			}
			c.i++
			if c.in[c.i-1] == ']' {
				break
			}
			if c.in[c.i-1] != ',' {
				return span{}, errSyntax
			}
		}
	}
	start := len(c.buf)
	c.buf = append(c.buf, '[')
	for i, e := range elems {
		if i > 0 {
			c.buf = append(c.buf, ',')
		}
		c.buf = append(c.buf, c.span(e)...)
	}
	c.buf = append(c.buf, ']')
	return span{start, len(c.buf)}, nil
}

// members reads the object at c.i (its '{' there) into its members, in
// the order written.
func (c *canonicalizer) members() ([]member, error) {
	c.i++
	ms := make([]member, 0, 16)
	if c.skipSpace() < len(c.in) && c.in[c.i] == '}' {
		c.i++
		return ms, nil
	}
	for {
		if c.skipSpace() >= len(c.in) || c.in[c.i] != '"' {
			return nil, errSyntax
		}
		key, err := c.str()
		if err != nil {
			return nil, err
		}
		if c.skipSpace() >= len(c.in) || c.in[c.i] != ':' {
			return nil, errSyntax
		}
		c.i++
		v, err := c.value()
		if err != nil {
			return nil, err
		}
		ms = append(ms, member{key: key, value: v})
		if c.skipSpace() >= len(c.in) {
			return nil, errSyntax
		}
		c.i++
		switch c.in[c.i-1] {
		case '}':
			return ms, nil
		case ',':
		default:
			return nil, errSyntax
		}
	}
}

// str decodes the string at c.i (its '"' there) into buf. Text of
// printable ASCII with no escape is copied as it is; any other is decoded
// by encoding/json.
func (c *canonicalizer) str() (span, error) {
	start := c.i
	c.i++
	plain := true
	for c.i < len(c.in) {
		switch b := c.in[c.i]; {
		case b == '"':
			c.i++
			s := len(c.buf)
			if plain {
				c.buf = append(c.buf, c.in[start+1:c.i-1]...)
				return span{s, len(c.buf)}, nil
			}
			var text string
			if err := json.Unmarshal(c.in[start:c.i], &text); err != nil {
				return span{}, err
			}
			c.buf = append(c.buf, text...)
			return span{s, len(c.buf)}, nil
		case b == '\\':
			plain = false
			c.i += 2
		default:
			plain = plain && b >= 0x20 && b < 0x7f
			c.i++
		}
	}
	return span{}, errSyntax
}

// appendString appends s as canonical JSON writes a string: printable
// ASCII but '"' and '\\' as it is, any other as encoding/json writes it
// without HTML escaping.
func appendString(dst, s []byte) []byte {
	for _, b := range s {
		if b < 0x20 || b >= 0x7f || b == '"' || b == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(string(s)) // a string always encodes
			return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
