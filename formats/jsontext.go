package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// jsonField is one member of an object written by prettyObject.
type jsonField struct {
	key string
	raw []byte // the value's JSON text
}

func jstr(key, v string) jsonField { return jsonField{key, appendJSONString(nil, v)} }
func jint(key string, v int64) jsonField {
	return jsonField{key, strconv.AppendInt(nil, v, 10)}
}

// prettyObject writes a flat object the way serde_json::to_string_pretty
// and JavaScript's JSON.stringify(v, null, 2) both do: two-space indent,
// ": " after each key, no trailing newline.
func prettyObject(fields ...jsonField) []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, f := range fields {
		b.WriteString("  ")
		b.Write(appendJSONString(nil, f.key))
		b.WriteString(": ")
		b.Write(f.raw)
		if i < len(fields)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// appendJSONString quotes s as serde_json and JSON.stringify do: only '"',
// '\\' and control characters are escaped (\b \f \n \r \t, the rest as
// lowercase \u00xx); HTML characters, U+2028/U+2029 and all other Unicode
// are written as they are. Invalid UTF-8 (which neither Rust nor
// JavaScript strings can hold) is written as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	return appendQuoted(b, s, jsonEscapes, func(r rune) string {
		if r < 0x20 {
			return fmt.Sprintf(`\u%04x`, r)
		}
		return ""
	})
}

var jsonEscapes = map[rune]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// appendQuoted writes s double-quoted: a rune of short as a backslash and
// its letter, one that long escapes as long says, any other as it is
// (invalid UTF-8 as U+FFFD).
func appendQuoted(b []byte, s string, short map[rune]byte, long func(rune) string) []byte {
	b = append(b, '"')
	for _, r := range s {
		if c, ok := short[r]; ok {
			b = append(b, '\\', c)
		} else if e := long(r); e != "" {
			b = append(b, e...)
		} else {
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// jsonObject decodes data as exactly one JSON object (surrounding white
// space allowed) into its members, numbers kept as their text. With
// uniqueKeys a repeated member is an error (serde's "duplicate field");
// otherwise the last one wins (Go and JavaScript).
func jsonObject(format string, data []byte, uniqueKeys bool) (map[string]json.RawMessage, error) {
	if err := checkSize(format, data); err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, malformed(format, "not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return nil, malformed(format, "empty file")
	}
	if err != nil {
		return nil, malformed(format, "invalid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, malformed(format, "not a JSON object")
	}
	obj := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, malformed(format, "invalid JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, malformed(format, "invalid JSON: object key is not a string")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, malformed(format, "invalid JSON: %v", err)
		}
		if _, dup := obj[key]; dup && uniqueKeys {
			return nil, malformed(format, "duplicate field %q", key)
		}
		obj[key] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, malformed(format, "invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, malformed(format, "data after the JSON object")
	}
	return obj, nil
}

// integer reads a JSON number that is a whole number in [lo, hi].
func integer(format, key string, n json.Number, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, malformed(format, "%s: %s is not an integer in [%d, %d]", key, n, lo, hi)
	}
	return v, nil
}
