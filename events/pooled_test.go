package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
)

// The plain encodings the pooled ones must equal: a new encoder, decoder
// and buffer for each value, as before the pools.

func plainDecode(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func plainEncode(t *testing.T, v any, indent string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func plainBody(t *testing.T, env Envelope, payload any) []byte {
	m := plainDecode(t, env)
	maps.Copy(m, plainDecode(t, payload))
	return bytes.TrimSuffix(plainEncode(t, m, ""), []byte("\n"))
}

// panics and refuses are payloads whose encoding stops half way: by a
// panic (recovered by BuildBody's caller), and by an error.
type panics struct{}

func (panics) MarshalJSON() ([]byte, error) { panic("a payload that panics while it is encoded") }

type refuses struct{}

func (refuses) MarshalJSON() ([]byte, error) {
	return nil, errors.New("a payload that cannot be encoded")
}

// TestPooledEncodingsAreThePlainOnesFromManyGoroutines: bodies, canonical
// renderings and lock files made at once by many goroutines (under -race
// in make test), of sizes that grow and shrink the pooled buffers, with
// text that escaping could change, each goroutine's good calls between
// bodies that fail (an error, a panic mid-encode, a payload that collides
// with an envelope whose optional fields the good ones lack), are the
// plain encoding's bytes: no pooled buffer or map is shared, handed back
// while its bytes are still returned, or left holding what a failed call
// put in it.
func TestPooledEncodingsAreThePlainOnesFromManyGoroutines(t *testing.T) {
	type bodyCase struct {
		env     Envelope
		payload any
		// want is the body, canon the payload's Canonical.
		want, canon []byte
	}
	type fileCase struct {
		rec  Record
		want []byte
	}
	var bodies []bodyCase
	var files []fileCase
	for i, size := range []int{0, 1, 100, 511, 512, 4096, 70000, 3, 20} {
		text := strings.Repeat(fmt.Sprintf("<%d>&\u2028é\x01\xff\"\\", i), size/10+1)[:size]
		uid, user := i, fmt.Sprint("u<", i, ">")
		env := Envelope{EventID: fmt.Sprintf("01M82NQNZDDVC3QZH7KVMR09%02d", i), Seq: int64(i + 1), Type: LockAcquired,
			SchemaVersion: 1, At: "2026-11-22T22:23:54.861197406Z", RequestID: "r&" + text[:min(size, 40)], Actor: "a", HostID: "h", PID: i}
		if i%2 == 0 { // the optional fields on every other envelope
			env.LockName, env.UID, env.User = "lock-"+fmt.Sprint(i), &uid, &user
		}
		payload := map[string]any{"intent": text, "n": json.Number(fmt.Sprint(i, "e3")),
			"metadata": map[string]string{"k" + text[:min(size, 9)]: text}}
		for k := range i * 7 { // objects of many members: maps grown and emptied
			payload[fmt.Sprint("m", k)] = k
		}
		bodies = append(bodies, bodyCase{env, payload, plainBody(t, env, payload),
			bytes.TrimSuffix(plainEncode(t, plainDecode(t, payload), ""), []byte("\n"))})
		rec := Record{LockVersion: "1", LockName: env.LockName, RequestID: env.RequestID, Actor: text, Intent: "<i>",
			HostID: "h", PID: i, CreatedAt: env.At, LastHeartbeatAt: env.At, TTLSeconds: int64(size),
			Metadata: map[string]string{"a": text, "b&": "\u2028"}}
		files = append(files, fileCase{rec, plainEncode(t, rec, "  ")})
	}
	// Each failing call's envelope has every optional field, and its
	// payload members the good ones lack.
	uid, user := 1, "root"
	badEnv := Envelope{EventID: "bad", Type: LockAcquired, LockName: "bad-lock", UID: &uid, User: &user}
	stale := map[string]any{"stale1": 1, "stale2": "x", "stale3": []any{1}, "stale4": map[string]any{"a": 1}}
	bad := []any{
		panics{}, refuses{},
		map[string]any{"ok": 1, "f": func() {}},
		"not an object", []int{1, 2},
		maps.Collect(func(yield func(string, any) bool) { // collides after other members merged, in map order
			for k, v := range stale {
				yield(k, v)
			}
			yield("seq", 1)
		}),
		map[string]any{"nested": map[string]any{"x": panics{}}},
	}
	const goroutines, rounds = 8, 18
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			fail := func(format string, args ...any) {
				select {
				case errs <- fmt.Errorf(format, args...):
				default:
				}
			}
			for r := range rounds {
				i := (g*rounds + r) % len(bodies)
				func() {
					defer func() { _ = recover() }() // the panic of panics{}, as a caller that recovers
					if _, err := BuildBody(badEnv, bad[(g+r)%len(bad)]); err == nil {
						fail("BuildBody of the failing payload %d: no error", (g+r)%len(bad))
					}
				}()
				c := bodies[i]
				got, err := BuildBody(c.env, c.payload)
				if err != nil || !bytes.Equal(got, c.want) {
					fail("goroutine %d, round %d: BuildBody of case %d: %v\n%.300s\nwant\n%.300s", g, r, i, err, got, c.want)
					return
				}
				canon, err := Canonical(c.payload)
				if err != nil || !bytes.Equal(canon, c.canon) {
					fail("goroutine %d, round %d: Canonical of case %d's payload: %v\n%.300s\nwant\n%.300s", g, r, i, err, canon, c.canon)
					return
				}
				f := files[(i+g)%len(files)]
				if got := f.rec.File(); !bytes.Equal(got, f.want) {
					fail("goroutine %d, round %d: File of case %d:\n%.300s\nwant\n%.300s", g, r, (i+g)%len(files), got, f.want)
					return
				}
				// The bytes returned are the caller's: writing over them
				// changes nothing another call returns.
				for j := range got {
					got[j] = 0
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
