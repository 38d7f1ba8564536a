package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/schemaref"
	"github.com/lockledger/lockledger/schema"
)

// allTypes is every schema ValidateEvent answers for: every event type
// and the lock file.
var allTypes = append(append([]events.Type{}, events.Types...), events.Type(schema.LockFile))

// refValidate is schemaref.ValidateEvent, with a panic reported as such.
// (The library panics on numbers math/big refuses to expand, e.g.
// 1e1000001; schemaref.Validate turns that into a refusal, but a panic
// that got through must still be a refusal of schema.ValidateEvent's.)
func refValidate(t events.Type, body []byte) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			err, panicked = fmt.Errorf("library panic: %v", r), true
		}
	}()
	return schemaref.ValidateEvent(t, body), false
}

// sameVerdict compares the two validators on one body and schema.
func sameVerdict(tb testing.TB, typ events.Type, body []byte) {
	tb.Helper()
	ref, panicked := refValidate(typ, body)
	fast := schema.ValidateEvent(typ, body)
	if fast != nil && !isSchemaError(fast) {
		tb.Fatalf("%s: ValidateEvent error %v (%T) is not a *schema.Error wrapping ErrSchema", typ, fast, fast)
	}
	if panicked {
		if fast == nil {
			tb.Fatalf("%s: the library panics (%v) but ValidateEvent accepts\nbody: %q", typ, ref, body)
		}
		return
	}
	if (ref == nil) != (fast == nil) {
		tb.Fatalf("%s: the library says %v, ValidateEvent says %v\nbody: %q", typ, ref, fast, body)
	}
}

func isSchemaError(err error) bool {
	se, ok := err.(*schema.Error)
	return ok && se.Unwrap() == schema.ErrSchema
}

// member is one JSON object member addressed by a path of keys (and array
// indexes for targets).
type fieldPath []any // string keys, int indexes

func (p fieldPath) String() string {
	var b strings.Builder
	for _, s := range p {
		fmt.Fprintf(&b, "/%v", s)
	}
	return b.String()
}

func decodeGeneric(tb testing.TB, body []byte) map[string]any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// deepCopy copies a decoded JSON value.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = deepCopy(x)
		}
		return a
	}
	return v
}

// paths lists every member path of v: object members, and the members
// of objects inside arrays.
func paths(v any, prefix fieldPath) []fieldPath {
	var out []fieldPath
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append(fieldPath{}, prefix...), k)
			out = append(out, p)
			out = append(out, paths(v[k], p)...)
		}
	case []any:
		for i, x := range v {
			p := append(append(fieldPath{}, prefix...), i)
			if _, obj := x.(map[string]any); !obj {
				out = append(out, p) // an element of an array of scalars (changes, pids)
			}
			out = append(out, paths(x, p)...)
		}
	}
	return out
}

// objectPaths lists the paths of every object in v (the root included).
func objectPaths(v any, prefix fieldPath) []fieldPath {
	var out []fieldPath
	switch v := v.(type) {
	case map[string]any:
		out = append(out, prefix)
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, objectPaths(v[k], append(append(fieldPath{}, prefix...), k))...)
		}
	case []any:
		for i, x := range v {
			out = append(out, objectPaths(x, append(append(fieldPath{}, prefix...), i))...)
		}
	}
	return out
}

// edit applies f to the container holding the last step of p.
func edit(root any, p fieldPath, set func(parent any, key any)) {
	cur := root
	for _, step := range p[:len(p)-1] {
		switch s := step.(type) {
		case string:
			cur = cur.(map[string]any)[s]
		case int:
			cur = cur.([]any)[s]
		}
	}
	set(cur, p[len(p)-1])
}

func encode(tb testing.TB, v any) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// replacements are the values every field is set to in turn: each JSON
// type, numbers at and around every bound and in every spelling, strings
// at and around every length bound and pattern.
func replacements() []string {
	r := []string{
		`null`, `true`, `false`, `[]`, `[1]`, `{}`, `{"a":"b"}`, `{"a":1}`, `{"a":null}`, `[{}]`,
		`0`, `1`, `-1`, `2`, `255`, `256`, `-0`, `0.0`, `1.0`, `1.5`, `0.5`, `-0.5`, `1e0`, `1E0`, `10e-1`, `0.1e1`,
		`1e2`, `1e-1`, `100e-2`, `254.9999999999999999999`, `255.0000000000000000001`, `0.99999999999999999999`,
		`1e400`, `-1e400`, `9223372036854775807`, `9223372036854775808`, `-9223372036854775809`,
		`4294967295`, `4294967296`, `4294967295.0`, `4294967295.5`,
		`0e99999999999`, `0.0e-1000001`, `1e1000001`, `1e-1000001`, `0e99999999999999999999`,
		`1e99999999999999999999`, `1e-99999999999999999999`, `100e-1000002`, `1.0e1000002`, `0.01e-999999`,
		// (1e1000000 is fine with big.Rat but takes it 50 ms: TestFastNumbers has it.)
		// The "int64" and "float64" formats: integers in other spellings, and
		// the edges of int64 and float64.
		`2.0`, `42e0`, `4.2e1`, `1.0e0`, `-0.0`, `-0e0`, `99999999999999999999`, `100000000000000000`,
		`1000000000000000000`, `9223372036854775807.0`, `92233720368547758070e-1`, `-9223372036854775808`,
		`1e18`, `1e-400`, `-1e-400`, `1.7976931348623157e308`, `1.7976931348623159e308`, `-1.8e308`,
		`2e308`, `0.1e309`, `0.00000000000000000000000000000000001e340`,
		strings.Repeat("9", 308), strings.Repeat("9", 309), "1" + strings.Repeat("0", 308) + ".5",
		maxFloat.Text(10), new(big.Int).Sub(halfPastMaxFloat, big.NewInt(1)).Text(10), halfPastMaxFloat.Text(10),
		`""`, `"x"`, `"A"`, `"/"`, `"//"`, `"/x"`, `"x/"`, `"v1"`, `"V1"`, `"held"`, `"stale"`, `"dead"`, `"free"`,
		`"success"`, `"failure"`, `"cancelled"`, `"forced"`, `"Forced"`, `"stale_lock_forced"`, `"superseded"`, `"forced_active "`, `"reclaimed"`, `"queue"`, `"Queue"`,
		`"release"`, `"steal"`, `"heartbeat"`, `"Release"`, `"terminated"`, `"killed"`, `"left_running"`, `"bso"`,
		`["x"]`, `[""]`, `[0]`, `[1,2]`, `["x",1]`, `[null]`, `[[]]`, `[1.0]`,
		`"tower-fleet"`, `"gitclaw"`, `"beads "`, `"shared"`, `"exclusive"`, `"Shared"`, `1000000`, `1000001`, `"lock_heartbeat"`, `"lock_acquired"`, `"acquire_blocked"`,
		`"ledger_exported"`, `"ledger_verified"`, `"ledger_projected"`, `"ledger_pruned"`, `"ledger_unpruned"`, `"signer_added"`, `"signer_removed"`, `"owner"`, `"ok"`, `"failed"`, `"refused"`, `"OK"`,
		`"jsonl"`, `"csv"`, `"json"`, `"stdout"`, `"stdout "`, `"Stdout"`, `"-"`, `"\u0073tdout"`,
		`"` + strings.Repeat("0a", 32) + `"`, `"` + strings.Repeat("0A", 32) + `"`, `"` + strings.Repeat("0a", 31) + `0"`,
		`"lock_\u0061cquired"`, `"\u0076\u0031"`, `"\/x"`, `"\u002fx"`,
		`"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:05.5+01:00"`, `"2026-02-30T03:04:05Z"`, `"2024-02-29T23:59:60Z"`,
		`"2026-01-02t03:04:05z"`, `"2026-01-02T24:00:00Z"`, `"2026-01-02 03:04:05Z"`, `"2026-01-02T+1:04:05Z"`,
		`"2026-11-22T22:23:54.861197406Z"`, `"2026-11-22T22:23:54.86119740Z"`, `"2026-11-22T22:23:54.861197406z"`,
		`"01M82NQNZDDVC3QZH7KVMR0924"`, `"01M82NQNZDDVC3QZH7KVMR092I"`, `"01m82nqnzddvc3qzh7kvmr0924"`,
		`"01M82NQNZDDVC3QZH7KVMR092"`, `"01M82NQNZDDVC3QZH7KVMR09244"`, `"01M82NQNZDDVC3QZH7KVMR0924\n"`,
		`"sha256:` + strings.Repeat("ab", 32) + `"`, `"sha256:` + strings.Repeat("AB", 32) + `"`,
		`"sha256:` + strings.Repeat("ab", 31) + `"`, `"sha512:` + strings.Repeat("ab", 32) + `"`,
		`"deploy"`, `"Deploy"`, `"a-"`, `"-a"`, `"a_b"`, `"a.b"`, `"a b"`, `"é"`, `"\u00e9"`, `"\ud800"`, `"\ud83d\ude00"`,
		`"req_1"`, `"req:1.2-3_4"`, `"req/1"`, `"x\u0000"`, `"\t"`,
		"\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"",
	}
	// Every maxLength/minLength and pattern length bound, and one past it.
	for _, n := range []int{1, 2, 26, 64, 65, 128, 129, 256, 257, 1024, 1025, 4096, 4097} {
		r = append(r, `"`+strings.Repeat("a", n)+`"`, `"/`+strings.Repeat("é", n-1)+`"`)
	}
	for _, n := range []int{64, 65, 256, 257} {
		r = append(r, `"`+strings.Repeat(`\u00e9`, n)+`"`)
	}
	return r
}

var (
	maxFloat, _ = new(big.Float).SetFloat64(math.MaxFloat64).Int(nil)
	// halfPastMaxFloat is half an ulp past math.MaxFloat64: strconv.ParseFloat
	// rounds it to +Inf.
	halfPastMaxFloat = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 1024), new(big.Int).Lsh(big.NewInt(1), 970))
)

// mutations derives invalid (and some valid) bodies from a valid one:
// every member removed, set to every replacement, an extra member in
// every object, and text-level damage.
func mutations(tb testing.TB, s seedBody, reps []string) []seedBody {
	tb.Helper()
	var out []seedBody
	if s.full {
		out = fieldMutations(tb, s, decodeGeneric(tb, s.body), reps)
	}
	return append(out, textMutations(s)...)
}

// fieldMutations: every member removed, set to every replacement, an extra
// member in every object, too many targets.
func fieldMutations(tb testing.TB, s seedBody, root map[string]any, reps []string) []seedBody {
	var out []seedBody
	add := func(name string, b []byte) {
		out = append(out, seedBody{name: s.name + ": " + name, typ: s.typ, body: b})
	}
	for _, p := range paths(root, nil) {
		if _, member := p[len(p)-1].(string); member {
			c := deepCopy(root)
			edit(c, p, func(parent any, key any) {
				delete(parent.(map[string]any), key.(string))
			})
			add("remove "+p.String(), encode(tb, c))
		}
		for _, r := range reps {
			c := deepCopy(root)
			edit(c, p, func(parent any, key any) {
				switch parent := parent.(type) {
				case map[string]any:
					parent[key.(string)] = json.RawMessage(r)
				case []any:
					parent[key.(int)] = json.RawMessage(r)
				}
			})
			add("set "+p.String()+" = "+r, encode(tb, c))
		}
	}
	for _, p := range objectPaths(root, nil) {
		for _, extra := range []string{"extra", "type", "seq", "metadata", "format", "lock_version", "held_by", "recorded_by", "unreadable_file", "note", "foreign", "Seq",
			"action", "state", "superseded_by", "pids", "changes", "uid", "user", "lock_name", "events", "destination", "result",
			"mode", "limit", "rollback_accepted", "ledger_id", "hash", "waited_seconds", "fence", "resource", "stale_token", "current_token",
			"release_secret_sha256", "authorized_by", "run"} {
			c := deepCopy(root)
			if len(p) == 0 {
				c.(map[string]any)[extra] = json.RawMessage(`"x"`)
			} else {
				edit(c, p, func(parent any, key any) {
					var obj map[string]any
					switch parent := parent.(type) {
					case map[string]any:
						obj, _ = parent[key.(string)].(map[string]any)
					case []any:
						obj, _ = parent[key.(int)].(map[string]any)
					}
					if obj != nil {
						if _, exists := obj[extra]; !exists {
							obj[extra] = json.RawMessage(`"x"`)
						}
					}
				})
			}
			add("extra "+p.String()+"/"+extra, encode(tb, c))
		}
	}
	// Arrays at and around their item bounds.
	for _, a := range []struct {
		field  string
		counts []int
	}{{"targets", []int{0, 16, 17}}, {"changes", []int{0, 1, 64, 65}}, {"pids", []int{0, 1, 4096, 4097}}} {
		t, ok := root[a.field].([]any)
		if !ok || len(t) == 0 {
			continue
		}
		for _, n := range a.counts {
			c := deepCopy(root).(map[string]any)
			items := make([]any, n)
			for i := range items {
				items[i] = deepCopy(t[i%len(t)])
			}
			c[a.field] = items
			add(fmt.Sprintf("%d %s", n, a.field), encode(tb, c))
		}
		for _, r := range []string{`1,0`, `1,1.0`, `1,"x"`, `"x",""`, `"x",null`, `1,9223372036854775808`, `"x","` + strings.Repeat("a", 1025) + `"`} {
			c := deepCopy(root).(map[string]any)
			c[a.field] = json.RawMessage(`[` + r + `]`)
			add(a.field+" = ["+r+"]", encode(tb, c))
		}
	}
	return out
}

// textMutations: duplicates, escapes, white space, trailing data, syntax.
func textMutations(s seedBody) []seedBody {
	var out []seedBody
	b := s.body
	text := map[string]string{
		"trailing }":            string(b) + "}",
		"trailing ]":            string(b) + "]",
		"trailing ] garbage":    string(b) + " ]garbage",
		"trailing space":        string(b) + " \n\t\r",
		"trailing x":            string(b) + "x",
		"trailing space }":      string(b) + " }",
		"trailing }}":           string(b) + "}}",
		"trailing NUL":          string(b) + "\x00",
		"trailing vtab":         string(b) + "\v",
		"trailing object":       string(b) + "{}",
		"trailing comma":        string(b) + ",",
		"leading space":         " \n" + string(b),
		"leading BOM":           "\ufeff" + string(b),
		"leading vtab":          "\v" + string(b),
		"nbsp inside":           strings.Replace(string(b), ",", ",\u00a0", 1),
		"spaces inside":         strings.ReplaceAll(strings.ReplaceAll(string(b), ",", " ,\n "), ":", "\t: "),
		"comma before }":        string(b[:len(b)-1]) + ",}",
		"empty":                 "",
		"space":                 " ",
		"array":                 "[" + string(b) + "]",
		"string":                `"x"`,
		"null":                  "null",
		"number":                "1",
		"empty object":          "{}",
		"truncated":             string(b[:len(b)-1]),
		"half":                  string(b[:len(b)/2]),
		"single quote":          strings.Replace(string(b), `"`, `'`, 2),
		"NaN":                   strings.Replace(string(b), `"pid":`, `"pid":NaN,"x":`, 1),
		"leading zero":          strings.Replace(string(b), `"pid":`, `"pid":0`, 1),
		"plus number":           strings.Replace(string(b), `"pid":`, `"pid":+`, 1),
		"control char":          strings.Replace(string(b), `"actor":"`, "\"actor\":\"\x01", 1),
		"bad escape":            strings.Replace(string(b), `"actor":"`, `"actor":"\x`, 1),
		"short u escape":        strings.Replace(string(b), `"actor":"`, `"actor":"\u12`, 1),
		"escaped key":           strings.Replace(string(b), `"seq"`, `"\u0073eq"`, 1),
		"escaped type key":      strings.Replace(string(b), `"lock_version"`, `"lock\u005fversion"`, 1),
		"upper key":             strings.Replace(string(b), `"seq"`, `"SEQ"`, 1),
		"invalid utf8 key":      strings.Replace(string(b), `"seq"`, "\"seq\xff\"", 1),
		"invalid utf8 value":    strings.Replace(string(b), `"actor":"`, "\"actor\":\"\xff", 1),
		"dup first seq 0":       `{"seq":0,` + string(b[1:]),
		"dup last seq 0":        string(b[:len(b)-1]) + `,"seq":0}`,
		"dup last seq 7":        string(b[:len(b)-1]) + `,"seq":7}`,
		"dup last pid 1.0":      string(b[:len(b)-1]) + `,"pid":1.0}`,
		"dup last pid null":     string(b[:len(b)-1]) + `,"pid":null}`,
		"dup last pid 42e0":     string(b[:len(b)-1]) + `,"pid":42e0}`,
		"dup last pid huge":     string(b[:len(b)-1]) + `,"pid":99999999999999999999}`,
		"dup last seq 2.0":      string(b[:len(b)-1]) + `,"seq":2.0}`,
		"dup last version 1.0":  string(b[:len(b)-1]) + `,"schema_version":1.0}`,
		"dup last version 1e0":  string(b[:len(b)-1]) + `,"schema_version":1e0}`,
		"dup last held 1e400":   string(b[:len(b)-1]) + `,"held_duration_seconds":1e400}`,
		"dup last waited 2e308": string(b[:len(b)-1]) + `,"waited_seconds":2e308}`,
		"dup last wait 1e-400":  string(b[:len(b)-1]) + `,"waited_seconds":1e-400}`,
		"dup last ttl 9e0":      string(b[:len(b)-1]) + `,"ttl_seconds":9e0}`,
		"nested pid 77.0":       strings.Replace(string(b), `"pid":77`, `"pid":77.0`, 1),
		"nested pid fixed":      strings.Replace(string(b), `"pid":77`, `"pid":77.0,"pid":77`, 1),
		"nested pid broken":     strings.Replace(string(b), `"pid":77`, `"pid":77,"pid":77.0`, 1),
		"nested meta number":    strings.Replace(string(b), `"ticket":"OPS-1"`, `"ticket":1`, 1),
		"nested meta fixed":     strings.Replace(string(b), `"ticket":"OPS-1"`, `"ticket":1,"ticket":"OPS-1"`, 1),
		"dup first pid big":     `{"pid":1e1000001,` + string(b[1:]),
		"dup last pid big":      string(b[:len(b)-1]) + `,"pid":1e1000001}`,
		"dup metadata":          string(b[:len(b)-1]) + `,"metadata":{"a":"b"}}`,
		"dup metadata bad":      string(b[:len(b)-1]) + `,"metadata":{"a":1}}`,
		"dup metadata fixed":    string(b[:len(b)-1]) + `,"metadata":{"a":1,"b":2,"a":"x","b":"y"}}`,
		"dup metadata esc":      string(b[:len(b)-1]) + `,"metadata":{"a":1,"\u0061":"x"}}`,
		"dup metadata utf8":     string(b[:len(b)-1]) + ",\"metadata\":{\"\xff\":1,\"\xfe\":\"x\"}}",
		"dup metadata left":     string(b[:len(b)-1]) + `,"metadata":{"a":1,"b":"x","\u0062":2}}`,
		"dup type":              string(b[:len(b)-1]) + `,"type":"lock_heartbeat"}`,
		"dup metadata last bad": string(b[:len(b)-1]) + `,"metadata":{"a":"x","a":1}}`,
		"nested dup fixed":      strings.Replace(string(b), `"previous_lock":{`, `"previous_lock":{"pid":-1,"lock_version":"v2",`, 1),
		"nested dup broken":     strings.Replace(string(b), `"previous_lock":{`, `"previous_lock":{"zz":1,`, 1),
		"nested held_by dup":    strings.Replace(string(b), `"held_by":{`, `"held_by":{"pid":"x",`, 1),
		"nested caller dup":     strings.Replace(string(b), `"recorded_by":{`, `"recorded_by":{"actor":"",`, 1),
		"nested escaped key":    strings.Replace(string(b), `"previous_lock":{`, `"previous_lock":{"\u0070id":-1,`, 1),
		"escaped lock name":     strings.Replace(string(b), `"lock_name":"deploy-prod"`, `"lock_name":"deploy\u002dprod"`, 1),
		"escaped lock name bad": strings.Replace(string(b), `"lock_name":"deploy-prod"`, `"lock_name":"deploy\u002Dpro\u0044"`, 1),
		"escaped event id":      strings.Replace(string(b), `"event_id":"0`, `"event_id":"\u0030`, 1),
		"target dup":            strings.Replace(string(b), `"targets":[{`, `"targets":[{"path":"x",`, 1),
		"target extra":          strings.Replace(string(b), `"targets":[{`, `"targets":[{"x":"x",`, 1),
		"dup extra":             string(b[:len(b)-1]) + `,"zzz":1,"zzz":2}`,
		"secret hash upper":     string(b[:len(b)-1]) + `,"release_secret_sha256":"` + strings.Repeat("0A", 32) + `"}`,
		"secret hash short":     string(b[:len(b)-1]) + `,"release_secret_sha256":"` + strings.Repeat("0a", 31) + `"}`,
		"secret hash long":      string(b[:len(b)-1]) + `,"release_secret_sha256":"` + strings.Repeat("0a", 32) + `0"}`,
		"secret hash ok":        string(b[:len(b)-1]) + `,"release_secret_sha256":"` + strings.Repeat("f9", 32) + `"}`,
		"secret hash dup":       string(b[:len(b)-1]) + `,"release_secret_sha256":"x","release_secret_sha256":"` + strings.Repeat("f9", 32) + `"}`,
		"authorized ok":         string(b[:len(b)-1]) + `,"authorized_by":"release_secret"}`,
		"authorized bad":        string(b[:len(b)-1]) + `,"authorized_by":"uid"}`,
		"authorized dup":        string(b[:len(b)-1]) + `,"authorized_by":1,"authorized_by":"release_secret"}`,
		"run true":              string(b[:len(b)-1]) + `,"run":true}`,
		"run false":             string(b[:len(b)-1]) + `,"run":false}`,
		"run string":            string(b[:len(b)-1]) + `,"run":"true"}`,
		"run null":              string(b[:len(b)-1]) + `,"run":null}`,
		"run dup":               string(b[:len(b)-1]) + `,"run":1,"run":true}`,
	}
	keys := make([]string, 0, len(text))
	for k := range text {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, seedBody{name: s.name + ": " + k, typ: s.typ, body: []byte(text[k]), cross: true})
	}
	for i := 1; i < 10; i++ {
		out = append(out, seedBody{name: fmt.Sprintf("%s: cut %d/10", s.name, i), typ: s.typ, body: b[:len(b)*i/10]})
	}
	return out
}

// deepBodies nest arrays in the metadata of a lock file (any object) or of
// previous_lock (refused at any depth: its values are strings) right up to
// encoding/json's depth limit of 10000, and one past it.
func deepBodies(tb testing.TB, seeds []seedBody) []seedBody {
	var out []seedBody
	for _, s := range seeds {
		if s.typ != events.LockStolen && s.typ != events.Type(schema.LockFile) {
			continue
		}
		depth := 2 // the lock file object, its metadata
		if s.typ == events.LockStolen {
			depth = 3 // the event, previous_lock, its metadata
		}
		for _, total := range []int{jsonMaxDepth, jsonMaxDepth + 1} {
			n := total - depth
			nest := `{"deep":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
			root := decodeGeneric(tb, s.body)
			if s.typ == events.LockStolen {
				root["previous_lock"].(map[string]any)["metadata"] = "__DEEP__"
			} else {
				root["metadata"] = "__DEEP__"
			}
			// Spliced as text: encoding/json would refuse to write it.
			b := bytes.Replace(encode(tb, root), []byte(`"__DEEP__"`), []byte(nest), 1)
			out = append(out, seedBody{name: fmt.Sprintf("%s: depth %d", s.name, total), typ: s.typ, body: b})
		}
		break
	}
	return out
}

// corpus is every valid seed, every mutation of them, and the deep bodies
// (built once per test binary: the differential test and the fuzz target's
// seeds share it).
func corpus(tb testing.TB) []seedBody {
	corpusOnce.Do(func() { corpusCache = buildCorpus(tb) })
	if corpusCache == nil {
		tb.Fatal("corpus: built with errors")
	}
	return corpusCache
}

// jsonMaxDepth is encoding/json's nesting limit.
const jsonMaxDepth = 10000

var (
	corpusOnce  sync.Once
	corpusCache []seedBody
)

func buildCorpus(tb testing.TB) []seedBody {
	seeds := validSeeds(tb)
	out := append([]seedBody{}, seeds...)
	reps := replacements()
	for _, s := range seeds {
		out = append(out, mutations(tb, s, reps)...)
	}
	for _, typ := range []events.Type{events.LockStolen, events.Type(schema.LockFile)} {
		var only []seedBody
		for _, s := range seeds {
			if s.typ == typ {
				only = append(only, s)
			}
		}
		out = append(out, deepBodies(tb, only)...)
	}
	return out
}
