package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The reference rendering the one-pass canonicalizer must match byte for
// byte: each part marshalled, decoded into a map (numbers as json.Number),
// merged, and encoded again by encoding/json.

func mergeInto(m map[string]any, v any) error {
	var part map[string]any
	if err := remarshal(v, &part); err != nil {
		return err
	}
	for k, val := range part {
		if _, dup := m[k]; dup {
			return fmt.Errorf("events: payload field %q collides with the envelope", k)
		}
		m[k] = val
	}
	return nil
}

func remarshal(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(out)
}

func referenceBody(env Envelope, payload any) ([]byte, error) {
	m := map[string]any{}
	if err := mergeInto(m, env); err != nil {
		return nil, err
	}
	if payload != nil {
		if err := mergeInto(m, payload); err != nil {
			return nil, err
		}
	}
	return referenceEncode(m)
}

func referenceCanonical(v any) ([]byte, error) {
	var generic any
	if err := remarshal(v, &generic); err != nil {
		return nil, err
	}
	return referenceEncode(generic)
}

func referenceEncode(generic any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// randomText is text that escaping could change: HTML characters, quotes,
// backslashes, control characters, U+2028, non-ASCII, U+FFFD and invalid
// UTF-8, or plain ASCII.
func randomText(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", " ", "<", ">", "&", `"`, `\`, "/", "\n", "\t", "\x00", "\x01", "\x1f", "\x7f",
		"é", "\u2028", "\u2029", "\ufffd", "\xff", "\xc3", "日本", "😀", "\\u0041", "'", "{", "}", "[", "]", ",", ":"}
	if r.IntN(3) == 0 {
		return fmt.Sprintf("plain-%d", r.IntN(1000))
	}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// fill sets every field v reaches to a random value: strings of
// randomText, numbers of every size and sign (floats too), maps with
// random keys, slices of random length, pointers set or nil.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomText(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n := []int64{0, 1, -1, math.MaxInt32, r.Int64(), -r.Int64(), math.MinInt64}[r.IntN(7)]
		if v.Kind() == reflect.Int32 {
			n = int64(int32(n))
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint64:
		v.SetUint(r.Uint64())
	case reflect.Float64:
		v.SetFloat([]float64{0, 1.5, -2.25, 1e-7, 1e21, 123456789.125, r.Float64() * 1e6, r.NormFloat64()}[r.IntN(8)])
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i))
			}
		}
	case reflect.Slice:
		if r.IntN(4) == 0 {
			v.SetZero()
			return
		}
		s := reflect.MakeSlice(v.Type(), r.IntN(4), r.IntN(4)+4)
		for i := range s.Len() {
			fill(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if r.IntN(4) == 0 {
			v.SetZero()
			return
		}
		m := reflect.MakeMap(v.Type())
		for range r.IntN(5) {
			k := reflect.New(v.Type().Key()).Elem()
			fill(r, k)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(r, e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	}
}

// Sealing in one pass renders the bytes the three-pass reference does,
// for many events of every type with random fields: every hash depends
// on them.
func TestBuildBodyMatchesTheReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	n := 0
	for i := range 600 {
		for typ, newPayload := range payloads {
			var env Envelope
			fill(r, reflect.ValueOf(&env).Elem())
			env.Type = typ
			if i%5 == 0 {
				env.SetOSUser(r.IntN(70000), randomText(r))
			}
			payload := newPayload()
			if i%7 != 0 {
				fill(r, reflect.ValueOf(payload).Elem())
			}
			if i%11 == 0 {
				payload = nil
			}
			want, werr := referenceBody(env, payload)
			got, gerr := BuildBody(env, payload)
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("%s: BuildBody\n%s (%v)\nreference\n%s (%v)", typ, got, gerr, want, werr)
			}
			n++
		}
	}
	if n < 10000 {
		t.Fatalf("only %d events compared", n)
	}
}

// A payload's field may not take an envelope's name, whatever its value.
func TestBuildBodyRefusesCollisions(t *testing.T) {
	env := Envelope{EventID: "e", Seq: 1, Type: LockAcquired, At: "t", RequestID: "r", Actor: "a", HostID: "h"}
	for _, payload := range []any{map[string]any{"seq": 2}, map[string]any{"actor": nil, "zz": 1}, json.RawMessage(`{"a":1,"type":"x"}`)} {
		if _, err := BuildBody(env, payload); err == nil || !strings.Contains(err.Error(), "collides with the envelope") {
			t.Errorf("%v: %v", payload, err)
		}
	}
	for _, payload := range []any{json.RawMessage(`[1]`), "text", 3} {
		if _, err := BuildBody(env, payload); !errors.Is(err, errNotObject) {
			t.Errorf("%v: %v; want a payload that is no object refused", payload, err)
		}
	}
	for _, payload := range []any{json.RawMessage(`null`), map[string]any{}, (*Heartbeat)(nil)} {
		got, err := BuildBody(env, payload)
		want, _ := referenceBody(env, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%v: %s, %v; want the envelope alone %s", payload, got, err, want)
		}
	}
}

// Canonical matches the reference on any JSON document: keys sorted and
// given once, escapes as the encoder writes them, numbers as written.
func FuzzCanonicalMatchesTheReference(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":"<&>","c":{"z":true,"y":null}}`, `{"a":1,"a":2,"A":[1e3,-0,0.10]}`,
		`"\u0041\ud83d\ude00\u2028\ufffd\""`, `[{"\u00e9":1,"e":2,"\n":3,"\u007f":4}]`, `{"k":"\u003c\/"}`, `[]`, `{}`, `null`,
		"\"\xff\xc3\"", ` { "x" : [ 1 , 2 ] } `, `123456789012345678901234567890`, `{"":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		want, werr := referenceCanonical(json.RawMessage(doc))
		got, gerr := Canonical(json.RawMessage(doc))
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%q: Canonical %q (%v), reference %q (%v)", doc, got, gerr, want, werr)
		}
	})
}

// Canonical of the values the ledger and its readers pass (events,
// decoded bodies, maps) matches the reference.
func TestCanonicalMatchesTheReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for range 150 {
		for _, newPayload := range payloads {
			p := newPayload()
			fill(r, reflect.ValueOf(p).Elem())
			var decoded any
			b, _ := json.Marshal(p)
			if err := json.Unmarshal(b, &decoded); err != nil {
				t.Fatal(err)
			}
			for _, v := range []any{p, decoded, map[string]any{"at": at, "p": p, "n": json.Number("1E+2")}} {
				want, werr := referenceCanonical(v)
				got, gerr := Canonical(v)
				if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
					t.Fatalf("Canonical\n%s (%v)\nreference\n%s (%v)", got, gerr, want, werr)
				}
			}
		}
	}
}

func BenchmarkBuildBody(b *testing.B) {
	env := Envelope{EventID: "01M82NQNZDDVC3QZH7KVMR0924", Seq: 7, Type: LockAcquired, SchemaVersion: 1,
		At: "2026-11-22T22:23:54.861197406Z", LockName: "deploy", RequestID: "req_01M82NQNZDDVC3QZH7KVMR0924", Actor: "ci", HostID: "host-a", PID: 9}
	env.SetOSUser(1000, "ci")
	payload := &Acquired{TTLSeconds: 60, Intent: "deploy", IntentVersion: "1", FencingToken: 7,
		Metadata: map[string]string{"commit": "abc"}, PIDStart: "12345", BootID: "machine/boot"}
	for b.Loop() {
		if _, err := BuildBody(env, payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildBodyReference(b *testing.B) {
	env := Envelope{EventID: "01M82NQNZDDVC3QZH7KVMR0924", Seq: 7, Type: LockAcquired, SchemaVersion: 1,
		At: "2026-11-22T22:23:54.861197406Z", LockName: "deploy", RequestID: "req_01M82NQNZDDVC3QZH7KVMR0924", Actor: "ci", HostID: "host-a", PID: 9}
	env.SetOSUser(1000, "ci")
	payload := &Acquired{TTLSeconds: 60, Intent: "deploy", IntentVersion: "1", FencingToken: 7,
		Metadata: map[string]string{"commit": "abc"}, PIDStart: "12345", BootID: "machine/boot"}
	for b.Loop() {
		if _, err := referenceBody(env, payload); err != nil {
			b.Fatal(err)
		}
	}
}
