package schema

// The scanner: encoding/json's grammar, without building values.

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type jkind uint8

const (
	jInvalid jkind = iota // a syntax error (in scanner.err)
	jNull
	jBoolean
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	return [...]string{"invalid JSON", "null", "boolean", "number", "string", "array", "object"}[k]
}

type scanner struct {
	b     []byte
	i     int
	depth int
	err   string // the first syntax error; once set, everything stops
}

func (s *scanner) fail(msg string) { s.failAt(s.i, msg) }

// failAt fails at offset i.
func (s *scanner) failAt(i int, msg string) {
	s.i = i
	if s.err == "" {
		s.err = msg + " at offset " + strconv.Itoa(s.i)
	}
	s.i = len(s.b)
}

func (s *scanner) syntaxErr() *verr { return &verr{msg: "not JSON: " + s.err} }

func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return // the common case: no white space
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value consumes any value (white space before it skipped) and returns
// its kind, jInvalid after a syntax error.
func (s *scanner) value() jkind {
	s.ws()
	if s.i >= len(s.b) {
		s.fail("unexpected end of JSON input")
		return jInvalid
	}
	var k jkind
	switch c := s.b[s.i]; {
	case c == '"':
		s.str()
		k = jString
	case c == '{':
		more := s.open('}')
		for more && s.err == "" {
			s.key()
			if s.err != "" {
				break
			}
			s.value()
			more = s.next('}')
		}
		s.close()
		k = jObject
	case c == '[':
		more := s.open(']')
		for more && s.err == "" {
			s.value()
			more = s.next(']')
		}
		s.close()
		k = jArray
	case c == 't':
		s.literal("true")
		k = jBoolean
	case c == 'f':
		s.literal("false")
		k = jBoolean
	case c == 'n':
		s.literal("null")
		k = jNull
	case isNumberStart(c):
		s.num()
		k = jNumber
	default:
		s.fail("invalid character " + strconv.QuoteRune(rune(c)) + " looking for beginning of value")
	}
	if s.err != "" {
		return jInvalid
	}
	return k
}

func (s *scanner) literal(w string) {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return
	}
	s.fail("invalid literal")
}

// open consumes '{' or '[' and reports whether a member or element
// follows (else it consumed end, the closing '}' or ']', too).
func (s *scanner) open(end byte) bool {
	s.i++
	s.depth++
	if s.depth > maxDepth {
		s.fail("exceeded max depth")
		return false
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		return false
	}
	return true
}

func (s *scanner) close() { s.depth-- }

// key consumes a member's name and its colon; start:end is the name's raw
// content.
func (s *scanner) key() (start, end int, plain bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.fail("looking for beginning of object key string")
		return 0, 0, false
	}
	start, end, plain = s.str()
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		s.fail("after object key")
		return 0, 0, false
	}
	s.i++
	s.ws()
	return start, end, plain
}

// next consumes ',' (true: a member or element follows) or end (false).
func (s *scanner) next(end byte) bool {
	s.ws()
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
			return true
		case end:
			s.i++
			return false
		}
	}
	if end == '}' {
		s.fail("after object key:value pair")
	} else {
		s.fail("after array element")
	}
	return false
}

// strPlain: bytes that may appear in a string without ending it, being
// escaped, or making it non-ASCII.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str consumes a string; start:end is its raw content. plain: no escapes
// and ASCII only, so the content is the decoded string.
func (s *scanner) str() (start, end int, plain bool) {
	b := s.b
	start = s.i + 1
	i := start
	plain = true
	for {
		// Eight bytes at a time while none may need attention.
		for i+8 <= len(b) && !mayBeSpecial(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			s.failAt(i, "unexpected end of JSON input")
			return start, start, false
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return start, i, plain
		case c == '\\':
			plain = false
			i++
			if i >= len(b) {
				s.failAt(i, "unexpected end of JSON input")
				return start, start, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for j := 0; j < 4; j++ {
					if i >= len(b) {
						s.failAt(i, "unexpected end of JSON input")
						return start, start, false
					}
					if !isHex(b[i]) {
						s.failAt(i, "invalid character in \\u hexadecimal character escape")
						return start, start, false
					}
					i++
				}
			default:
				s.failAt(i, "invalid character in string escape code")
				return start, start, false
			}
		case c < 0x20:
			s.failAt(i, "invalid character in string literal")
			return start, start, false
		default: // >= 0x80: UTF-8, valid or not (read as U+FFFD)
			plain = false
			i++
		}
	}
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

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// content is the decoded content of the string at start:end: the raw
// bytes when plain (no escapes, ASCII only).
func (s *scanner) content(start, end int, plain bool) []byte {
	if plain {
		return s.b[start:end]
	}
	return s.decode(start, end)
}

// decode returns the decoded content of the string at start:end (raw
// content offsets), exactly as encoding/json reads it.
func (s *scanner) decode(start, end int) []byte {
	var out string
	if err := json.Unmarshal(s.b[start-1:end+1], &out); err != nil {
		// Unreachable: the scanner accepted the string.
		return s.b[start:end]
	}
	return []byte(out)
}

// num consumes a number (JSON grammar) and returns it.
func (s *scanner) num() []byte {
	b := s.b
	start := s.i
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		s.failAt(i, "invalid character in numeric literal")
		return nil
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			s.failAt(i, "after decimal point in numeric literal")
			return nil
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			s.failAt(i, "in exponent of numeric literal")
			return nil
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return b[start:i]
}
