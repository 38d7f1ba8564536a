// Package termtext holds the one escaping of text that another user
// controls (actors, host ids, paths, another tool's lock file) before it
// reaches a terminal, a text report or an error message: every control
// character, every Unicode line or paragraph separator and bidirectional
// override, and every byte that is not UTF-8 is shown as a visible escape
// (\n, \x1b, \u202e), so such text can neither forge a line nor drive the
// terminal. Text without them is returned unchanged.
package termtext

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every character that could forge a line or drive a
// terminal written as a visible escape.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Unsafe(r):
			writeRune(&b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || Unsafe(r) {
			return i
		}
		i += size
	}
	return -1
}

// Unsafe reports whether r is one Escape writes as an escape: a control
// character, a line or paragraph separator, a bidirectional control.
func Unsafe(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == '\u2028', r == '\u2029': // line and paragraph separators
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069': // bidirectional embeddings, overrides, isolates
		return true
	}
	return false
}

// AppendJSON appends js, JSON text, to dst with each character that
// Unsafe reports and JSON lets an encoder write raw (DEL, the C1 controls,
// line and paragraph separators, bidirectional controls) written as a \u
// escape, and each byte that is not UTF-8 as \ufffd: the same JSON value,
// on the same lines, that no terminal obeys. Outside its strings JSON is
// ASCII, so each such character is in a string, where the escape stands
// for it; JSON's own whitespace, the only raw C0 characters an encoder
// writes, is kept.
func AppendJSON(dst, js []byte) []byte {
	for len(js) > 0 {
		if c := js[0]; c < utf8.RuneSelf && c != 0x7f {
			dst, js = append(dst, c), js[1:]
			continue
		}
		r, size := utf8.DecodeRune(js)
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case Unsafe(r):
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, js[:size]...)
		}
		js = js[size:]
	}
	return dst
}

func writeRune(b *strings.Builder, r rune) {
	switch r {
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	default:
		if r < 0x80 {
			fmt.Fprintf(b, `\x%02x`, r)
		} else {
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
}

// Sprintf is fmt.Sprintf with every text argument escaped: strings (and
// types made of one), errors and Stringers that are not numbers. The
// format is the caller's own and is kept as it is.
func Sprintf(format string, a ...any) string {
	return fmt.Sprintf(format, Args(a)...)
}

// Fprintf is fmt.Fprintf with the arguments escaped as Sprintf does.
func Fprintf(w io.Writer, format string, a ...any) (int, error) {
	return fmt.Fprintf(w, format, Args(a)...)
}

// Args escapes the text arguments of a print call (see Sprintf); the
// others are returned as they are.
func Args(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		out[i] = arg(v)
	}
	return out
}

func arg(v any) any {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		if rv.IsNil() {
			return v // printed by fmt as it would be: calling its methods could panic
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.Bool:
		return v // numbers keep their verbs (%d of a time.Duration)
	}
	switch x := v.(type) {
	case string:
		return Escape(x)
	case []byte:
		return Escape(string(x))
	case error:
		return Escape(x.Error())
	case fmt.Stringer:
		return Escape(x.String())
	}
	if rv.Kind() == reflect.String {
		return Escape(rv.String())
	}
	return v
}

// Clip cuts s to at most n bytes, on a rune boundary, for a message that
// quotes text of any length.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
