package schema

// ValidateEvent is a validator that accepts exactly the bodies the
// embedded JSON Schemas accept, as the library runs them
// (schemaref.Validate: encoding/json's Decoder with UseNumber, then
// santhosh-tekuri/jsonschema with Draft 2020-12 and AssertFormat), in one
// pass over the bytes and without building a value tree. Keeping the
// library out of the binary saves every process its init (it compiles the
// draft's metaschemas) and the compilation of the schema it uses.
//
// The schema files are the one source of every field: fields_gen.go (the
// kinds, every record's fields, what each event type allows and requires,
// and each field's rule) is generated from them by internal/cmd/schemagen/gen,
// which refuses any keyword or shape it does not know. The rules
// themselves (rules.go), the patterns (patterns.go), numbers (numbers.go)
// and the JSON scanner (scanner.go) are written by hand. After changing a
// schema file, run go generate ./schema/; TestGeneratedFieldsAreFresh
// fails until then, TestFastMirrorsSchemaFiles until its sha256 is
// updated, and FuzzFastMatchesSchema / TestFastMatchesSchema compare the
// two validators.
//
// What "exactly" covers, beyond the keywords themselves:
//   - JSON syntax as encoding/json reads it: strict RFC 8259 grammar,
//     control characters refused in strings, invalid UTF-8 accepted (and
//     read as U+FFFD), nesting deeper than 10000 refused, and after the
//     value only white space.
//   - Duplicate member names: the last one wins, as in the decoded map.
//     Keys and string values are compared after unescaping.
//   - Numbers are exact decimals (json.Number and math/big): 1.0 and 1e0 are
//     integers, 0.5e1 is 5; the "int64" format then refuses an integer not
//     written as one or beyond int64 (strconv.ParseInt), and "float64" a
//     number beyond float64 (strconv.ParseFloat). A number whose exponent
//     math/big refuses to expand (|exponent| > 10^6, or one that does not
//     fit in int64) makes the library panic on a nil *big.Rat wherever it
//     compares or type-checks the number, and schemaref.Validate turns
//     that panic into a refusal; it is refused here too.
//   - String lengths count runes of the decoded string; patterns and
//     formats apply to the decoded string.

//go:generate go run ../internal/cmd/schemagen -o fields_gen.go -decoder ../replay/decode_gen.go -events ../events/types_gen.go

import (
	"strconv"
	"strings"
)

// verr is one violation: ptr is the JSON pointer of the value (relative
// to the value being checked while it travels up), rule the keyword.
type verr struct {
	ptr, rule, msg string
}

// under prefixes the pointer with one reference token.
func (e *verr) under(token string) *verr {
	token = strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
	e.ptr = "/" + token + e.ptr
	return e
}

func (e *verr) detail() string {
	p := e.ptr
	if p == "" {
		p = "/"
	}
	if e.rule == "" {
		return p + ": " + e.msg
	}
	return p + ": " + e.rule + ": " + e.msg
}

// ---------------------------------------------------------------------
// The document

type validator struct {
	s scanner
	k kind // the schema: a field of the same name may differ by type (type, state, action)
}

func (v *validator) document(k kind) *verr {
	s := &v.s
	s.ws()
	var e *verr
	if s.i < len(s.b) && s.b[s.i] == '{' {
		e = v.body(k)
	} else {
		e = typeErr("object", s.value())
	}
	if s.err != "" {
		return s.syntaxErr()
	}
	s.ws()
	if s.i < len(s.b) {
		return &verr{msg: "trailing data after the JSON value"}
	}
	return e
}

// recordSchema describes an object with a fixed set of properties (its
// lookup and check are generated: a switch on id, not function values,
// which would make v escape through an indirect call).
type recordSchema struct {
	id    recordID
	names []string
	// extra is the keyword that refuses any other property.
	extra string
	// together is a set of properties present all or none
	// (dependentRequired, each requiring the others).
	together fieldSet
}

// fieldSet is a set of a record's fields by index, a bit mask of 128 bits
// (an event body has more than 64 fields).
type fieldSet [2]uint64

func (s fieldSet) has(f int) bool { return s[f>>6]&(1<<uint(f&63)) != 0 }

func (s *fieldSet) add(f int) { s[f>>6] |= 1 << uint(f&63) }

func (s fieldSet) and(t fieldSet) fieldSet { return fieldSet{s[0] & t[0], s[1] & t[1]} }

func (s fieldSet) andNot(t fieldSet) fieldSet { return fieldSet{s[0] &^ t[0], s[1] &^ t[1]} }

// record checks the object at the scanner: every member is a known field
// in allowed and valid by check (the last of duplicate members counts),
// every field of required is present. It consumes the whole value.
func (v *validator) record(rs *recordSchema, allowed, required fieldSet) *verr {
	s := &v.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return typeErr("object", s.value())
	}
	var seen fieldSet
	var errs []*verr // per field, allocated on the first violation
	var extra *verr
	more := s.open('}')
	for more && s.err == "" {
		ks, ke, plain := s.key()
		if s.err != "" {
			break
		}
		f := rs.lookup(s.content(ks, ke, plain))
		if f < 0 || !allowed.has(f) {
			s.value()
			if extra == nil {
				extra = &verr{rule: rs.extra, msg: "property " + strconv.Quote(string(s.content(ks, ke, plain))) + " is not allowed"}
			}
		} else {
			seen.add(f)
			e := rs.check(v, f)
			if e != nil {
				if errs == nil {
					errs = make([]*verr, len(rs.names))
				}
				errs[f] = e.under(rs.names[f])
			} else if errs != nil {
				errs[f] = nil
			}
		}
		more = s.next('}')
	}
	s.close()
	if s.err != "" {
		return nil
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	if missing := required.andNot(seen); missing != (fieldSet{}) {
		return rs.missing("required", missing)
	}
	if got := seen.and(rs.together); got != (fieldSet{}) && got != rs.together {
		return rs.missing("dependentRequired", rs.together.andNot(got))
	}
	return extra
}

// missing is the violation of rule by the fields of set, absent.
func (rs *recordSchema) missing(rule string, set fieldSet) *verr {
	var names []string
	for f := range rs.names {
		if set.has(f) {
			names = append(names, strconv.Quote(rs.names[f]))
		}
	}
	return &verr{rule: rule, msg: "missing properties: " + strings.Join(names, ", ")}
}
