package schema

import (
	"bytes"
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// noMin and noMax stand for an absent minimum or maximum (of a number,
// a string's length or an array's items).
const (
	noMin = math.MinInt64
	noMax = math.MaxInt64
)

// array: {"type": "array", "minItems": min, "maxItems": max, "items": item}
// (item is generated: a kind, not a function value, which would make v
// escape through an indirect call).
func (v *validator) array(min, max int, item itemKind) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return typeErr("array", s.value())
	}
	var first *verr
	n := 0
	more := s.open(']')
	for more && s.err == "" {
		if e := v.item(item); e != nil && first == nil {
			first = e.under(strconv.Itoa(n))
		}
		n++
		more = s.next(']')
	}
	s.close()
	if s.err != "" {
		return nil
	}
	if first != nil {
		return first
	}
	if n < min {
		return &verr{rule: "minItems", msg: "minimum " + strconv.Itoa(min) + " items required, but found " + strconv.Itoa(n) + " items"}
	}
	if n > max {
		return &verr{rule: "maxItems", msg: "maximum " + strconv.Itoa(max) + " items required, but found " + strconv.Itoa(n) + " items"}
	}
	return nil
}

// absPath: {"type": "string", "minLength": min, "maxLength": max, "pattern": "^/"}
// (min 0 when the schema has no minLength: the pattern needs one rune anyway).
func (v *validator) absPath(min, max int) *verr {
	d, plain, jk := v.stringContent()
	if jk != jString {
		return typeErr("string", jk)
	}
	if e := lengthErr(d, plain, min, max); e != nil {
		return e
	}
	if len(d) == 0 || d[0] != '/' {
		return patternErr("^/")
	}
	return nil
}

// constOrAbsPath: {"anyOf": [{"const": c}, {"type": "string",
// "minLength": min, "maxLength": max, "pattern": "^/"}]}.
func (v *validator) constOrAbsPath(c string, min, max int) *verr {
	d, plain, jk := v.stringContent()
	switch {
	case jk == jInvalid:
		return nil // syntax error, reported by the scanner
	case jk != jString:
		return &verr{rule: "anyOf", msg: "expected " + strconv.Quote(c) + " or an absolute path, but got " + jk.String()}
	case string(d) == c:
		return nil
	}
	if e := lengthErr(d, plain, min, max); e != nil {
		return &verr{rule: "anyOf", msg: "not " + strconv.Quote(c) + ", and " + e.rule + ": " + e.msg}
	}
	if len(d) == 0 || d[0] != '/' {
		return &verr{rule: "anyOf", msg: "neither " + strconv.Quote(c) + " nor an absolute path"}
	}
	return nil
}

// ---------------------------------------------------------------------
// Value rules

func typeErr(want string, got jkind) *verr {
	return &verr{rule: "type", msg: "expected " + want + ", but got " + got.String()}
}

func patternErr(pat string) *verr {
	return &verr{rule: "pattern", msg: "does not match pattern " + strconv.Quote(pat)}
}

// stringContent consumes a value; for a string it returns the decoded
// content (the raw bytes when plain: no escapes, ASCII only).
func (v *validator) stringContent() (d []byte, plain bool, jk jkind) {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, s.value()
	}
	start, end, plain := s.str()
	if s.err != "" {
		return nil, false, jInvalid
	}
	return s.content(start, end, plain), plain, jString
}

// lengthErr applies minLength/maxLength (runes of the decoded string).
func lengthErr(d []byte, plain bool, min, max int) *verr {
	n := len(d)
	if !plain {
		n = utf8.RuneCount(d)
	}
	if n < min {
		return &verr{rule: "minLength", msg: "length must be >= " + strconv.Itoa(min) + ", but got " + strconv.Itoa(n)}
	}
	if n > max {
		return &verr{rule: "maxLength", msg: "length must be <= " + strconv.Itoa(max) + ", but got " + strconv.Itoa(n)}
	}
	return nil
}

// str: {"type": "string"} with minLength min and maxLength max (0 and
// noMax when absent).
func (v *validator) str(min, max int) *verr {
	if min == 0 && max == noMax {
		// Only the type: no need to decode.
		s := &v.s
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '"' {
			s.str()
			return nil
		}
		return typeErr("string", s.value())
	}
	d, plain, jk := v.stringContent()
	if jk != jString {
		return typeErr("string", jk)
	}
	return lengthErr(d, plain, min, max)
}

// pattern: {"type": "string", "pattern": pat}; match is pat by hand.
func (v *validator) pattern(match func([]byte) bool, pat string) *verr {
	d, _, jk := v.stringContent()
	if jk != jString {
		return typeErr("string", jk)
	}
	if !match(d) {
		return patternErr(pat)
	}
	return nil
}

// enum of strings, without a type: any other value is refused by enum.
func (v *validator) enum(vals []string) *verr {
	d, _, jk := v.stringContent()
	if jk == jInvalid || jk == jString && slices.Contains(vals, string(d)) {
		return nil // jInvalid: a syntax error, reported by the scanner
	}
	return &verr{rule: "enum", msg: "value must be one of " + quoteAll(vals)}
}

func quoteAll(vals []string) string {
	q := make([]string, len(vals))
	for i, x := range vals {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// constString: {"const": c} for a string c.
func (v *validator) constString(c string) *verr {
	d, _, jk := v.stringContent()
	if jk == jInvalid || jk == jString && string(d) == c {
		return nil
	}
	return &verr{rule: "const", msg: "value must be " + strconv.Quote(c)}
}

// enumConst: {"enum": vals} and {"const": c} together (the envelope's
// type and the type file's own): a value of vals other than c breaks the
// const, any other value the enum.
func (v *validator) enumConst(vals []string, c string) *verr {
	d, _, jk := v.stringContent()
	if jk == jInvalid || jk == jString && string(d) == c {
		return nil
	}
	if jk == jString && slices.Contains(vals, string(d)) {
		return &verr{rule: "const", msg: "value must be " + strconv.Quote(c)}
	}
	return &verr{rule: "enum", msg: "value must be one of " + quoteAll(vals)}
}

// dateTime: {"type": "string", "format": "date-time"} (the library
// asserts formats; datetime.go is its check).
func (v *validator) dateTime() *verr {
	d, _, jk := v.stringContent()
	if jk != jString {
		return typeErr("string", jk)
	}
	if !isDateTime(d) {
		return &verr{rule: "format", msg: strconv.Quote(string(d)) + " is not valid \"date-time\""}
	}
	return nil
}

// boolean: {"type": "boolean"}.
func (v *validator) boolean() *verr { return v.ofKind(jBoolean) }

// anyObject: {"type": "object"}.
func (v *validator) anyObject() *verr { return v.ofKind(jObject) }

// ofKind consumes a value that must be of kind want, whatever it holds
// (invalid JSON is the scanner's error, not a type error).
func (v *validator) ofKind(want jkind) *verr {
	s := &v.s
	s.ws()
	if jk := s.value(); jk != want && jk != jInvalid {
		return typeErr(want.String(), jk)
	}
	return nil
}

// stringMap: {"type": "object", "additionalProperties": {"type": "string"}}.
// The last of duplicate keys counts, so a non-string value is forgiven
// by a later string value under the same (decoded) key.
func (v *validator) stringMap() *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return typeErr("object", s.value())
	}
	var bad map[string]jkind // decoded keys whose last value is not a string
	more := s.open('}')
	for more && s.err == "" {
		ks, ke, plain := s.key()
		if s.err != "" {
			break
		}
		var jk jkind
		if s.i < len(s.b) && s.b[s.i] == '"' {
			s.str()
			jk = jString
		} else {
			jk = s.value()
		}
		if jk != jString || bad != nil {
			k := string(s.content(ks, ke, plain))
			if jk != jString {
				if bad == nil {
					bad = map[string]jkind{}
				}
				bad[k] = jk
			} else {
				delete(bad, k)
			}
		}
		more = s.next('}')
	}
	s.close()
	if s.err != "" || len(bad) == 0 {
		return nil
	}
	k := slices.Min(slices.Collect(maps.Keys(bad)))
	return typeErr("string", bad[k]).under(k)
}

// integer: {"type": "integer", "format": "int64"} with minimum min and
// maximum max.
func (v *validator) integer(min, max int64) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || !isNumberStart(s.b[s.i]) {
		return typeErr("integer", s.value())
	}
	raw := s.num()
	if s.err != "" {
		return nil
	}
	if x, ok := smallInt(raw); ok {
		if x < min || x > max {
			return numFacts{ok: true, sign: cmp.Compare(x, 0), ip: max64(x, -x)}.bounds(raw, min, max)
		}
		return nil
	}
	n := analyzeNumber(raw)
	if !n.ok {
		return bigErr(raw)
	}
	if !n.isInt() {
		return &verr{rule: "type", msg: "expected integer, but got number"}
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
		return formatErr(raw, "int64", Int64Rule)
	}
	return n.bounds(raw, min, max)
}

func formatErr(raw []byte, format, rule string) *verr {
	return &verr{rule: "format", msg: showNumber(raw) + " is not valid " + strconv.Quote(format) + ": " + rule}
}

func showNumber(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:37]) + "..."
	}
	return string(raw)
}

// fitsFloat64: strconv.ParseFloat takes the number. Without an exponent,
// fewer than 309 digits are always below math.MaxFloat64.
func fitsFloat64(raw []byte) bool {
	if len(raw) < 309 && !bytes.ContainsAny(raw, "eE") {
		return true
	}
	_, err := strconv.ParseFloat(string(raw), 64)
	return err == nil
}

// smallInt: a number of at most 17 digits, no fraction and no exponent,
// is the integer it spells (the common case, without analyzeNumber).
func smallInt(raw []byte) (int64, bool) {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 17 {
		return 0, false
	}
	var x int64
	for _, c := range d {
		if !isDigit(c) {
			return 0, false
		}
		x = x*10 + int64(c-'0')
	}
	if raw[0] == '-' {
		x = -x
	}
	return x, true
}

// number: {"type": "number", "format": "float64", "minimum": min}.
func (v *validator) number(min int64) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || !isNumberStart(s.b[s.i]) {
		return typeErr("number", s.value())
	}
	raw := s.num()
	if s.err != "" {
		return nil
	}
	n := analyzeNumber(raw)
	if !n.ok {
		return bigErr(raw)
	}
	if !fitsFloat64(raw) {
		return formatErr(raw, "float64", Float64Rule)
	}
	return n.bounds(raw, min, noMax)
}

// constOne: {"const": 1, "format": "int64"}: const compares as numbers (1.0
// and 1e0 are 1), the format then takes only 1 itself.
func (v *validator) constOne() *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || !isNumberStart(s.b[s.i]) {
		if jk := s.value(); jk == jInvalid {
			return nil
		}
		return &verr{rule: "const", msg: "value must be 1"}
	}
	raw := s.num()
	if s.err != "" {
		return nil
	}
	n := analyzeNumber(raw)
	if !n.ok {
		return bigErr(raw)
	}
	if n.cmp(1) != 0 {
		return &verr{rule: "const", msg: "value must be 1"}
	}
	if string(raw) != "1" {
		return formatErr(raw, "int64", Int64Rule)
	}
	return nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func bigErr(raw []byte) *verr {
	return &verr{rule: "type", msg: "number " + showNumber(raw) + " has an exponent out of range"}
}

func (n numFacts) bounds(raw []byte, min, max int64) *verr {
	if min != math.MinInt64 && n.cmp(min) < 0 {
		return &verr{rule: "minimum", msg: "must be >= " + strconv.FormatInt(min, 10) + " but found " + string(raw)}
	}
	if max != noMax && n.cmp(max) > 0 {
		return &verr{rule: "maximum", msg: "must be <= " + strconv.FormatInt(max, 10) + " but found " + string(raw)}
	}
	return nil
}
