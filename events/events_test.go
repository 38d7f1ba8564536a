package events

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

func TestCanonicalSortsKeysAndKeepsText(t *testing.T) {
	got, err := Canonical(map[string]any{"b": 1, "a": "<&>", "c": map[string]any{"z": true, "y": nil}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"<&>","b":1,"c":{"y":null,"z":true}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestSealChainsAndDecodes(t *testing.T) {
	env := Envelope{EventID: "01M82NQNZDDVC3QZH7KVMR0924", Seq: 1, Type: LockStolen, SchemaVersion: 1,
		At: "2026-11-22T22:23:54.861197406Z", LockName: "x", RequestID: "r2", Actor: "a", HostID: "h", PID: 9}
	prev := Record{LockVersion: "v1", LockName: "x", RequestID: "r1", Metadata: map[string]string{"k": "v"}}
	ev := &Event{Envelope: env, PrevHash: Genesis("ledger-1"), Payload: &Stolen{
		Acquired: Acquired{TTLSeconds: 60, FencingToken: 1, Metadata: map[string]string{}}, PreviousLock: prev,
		PreviousLockHash: "sha256:00", Reason: ReasonStaleForced}}
	if err := ev.Seal(); err != nil {
		t.Fatal(err)
	}
	if ev.Hash != ChainHash(1, Genesis("ledger-1"), ev.Body) || len(ev.Hash) != 64 {
		t.Fatalf("hash %s does not chain", ev.Hash)
	}
	if Genesis("ledger-1") == Genesis("ledger-2") {
		t.Fatal("genesis must depend on the ledger id")
	}
	gotEnv, p, err := Decode(ev.Body)
	if err != nil {
		t.Fatal(err)
	}
	st := p.(*Stolen)
	if gotEnv != env || st.Reason != ReasonStaleForced || st.PreviousLock.RequestID != "r1" || st.TTLSeconds != 60 {
		t.Fatalf("decode: %+v %+v", gotEnv, st)
	}
	again, _ := BuildBody(gotEnv, st)
	if !bytes.Equal(again, ev.Body) {
		t.Fatalf("body does not round-trip:\n%s\n%s", ev.Body, again)
	}
	// A payload field may not shadow the envelope.
	if _, err := BuildBody(env, map[string]any{"seq": 2}); err == nil || !strings.Contains(err.Error(), "collides") {
		t.Fatalf("collision not refused: %v", err)
	}
}

func TestValidators(t *testing.T) {
	for name, ok := range map[string]bool{
		"a": true, "money-tracker-production": true, "a_b": true, strings.Repeat("a", 128): true,
		"": false, "-a": false, "a-": false, "_a": false, "A": false, "a/b": false, "a.b": false, strings.Repeat("a", 129): false,
	} {
		if got := ValidateLockName(name) == nil; got != ok {
			t.Errorf("lock name %q: valid=%v, want %v", name, got, ok)
		}
	}
	for id, ok := range map[string]bool{
		"req_01ABC": true, "a:b.c-d_e": true, strings.Repeat("r", 128): true,
		"": false, "a b": false, "a/b": false, strings.Repeat("r", 129): false, "é": false,
	} {
		if got := ValidateRequestID(id) == nil; got != ok {
			t.Errorf("request id %q: valid=%v, want %v", id, got, ok)
		}
	}
}

// TestBuildBodyIsCanonical: the body encoded once from the merged object
// is the canonical rendering of it, for text that escaping could change
// (HTML characters, control characters, non-ASCII, invalid UTF-8) and
// numbers as written.
func TestBuildBodyIsCanonical(t *testing.T) {
	env := Envelope{EventID: "01M82NQNZDDVC3QZH7KVMR0924", Seq: 7, Type: LockAcquired, SchemaVersion: 1,
		At: "2026-11-22T22:23:54.861197406Z", LockName: "x", RequestID: "r<&>", Actor: "a\u2028\x01é\xff", HostID: "h", PID: 9}
	payload := map[string]any{"intent": "<b>&amp;</b>\t\"q\"", "metadata": map[string]string{"z": "1", "a": "\u00e9"},
		"n": json.Number("1e3"), "big": uint64(1<<63 + 1)}
	got, err := BuildBody(env, payload)
	if err != nil {
		t.Fatal(err)
	}
	// The merged object made the plain way: each part marshalled, and
	// decoded by a decoder of its own.
	m := map[string]any{}
	for _, v := range []any{env, payload} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var part map[string]any
		if err := dec.Decode(&part); err != nil {
			t.Fatal(err)
		}
		maps.Copy(m, part)
	}
	want, err := Canonical(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("BuildBody:\n%s\nCanonical of the same object:\n%s", got, want)
	}
}

// TestBuildBodyAfterFailures: a body built after payloads that cannot be
// built (one that does not marshal, one whose JSON is not an object, one
// that collides with the envelope) is the body built before them.
func TestBuildBodyAfterFailures(t *testing.T) {
	env := Envelope{EventID: "01M82NQNZDDVC3QZH7KVMR0924", Seq: 7, Type: LockAcquired, SchemaVersion: 1,
		At: "2026-11-22T22:23:54.861197406Z", LockName: "x", RequestID: "r", Actor: "a", HostID: "h", PID: 9}
	payload := map[string]any{"intent": "deploy", "n": json.Number("12")}
	want, err := BuildBody(env, payload)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []any{map[string]any{"f": func() {}}, "not an object", []int{1, 2}, map[string]any{"seq": 1}} {
		if _, err := BuildBody(env, bad); err == nil {
			t.Fatalf("BuildBody with the payload %#v: no error", bad)
		}
		got, err := BuildBody(env, payload)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("after the payload %#v:\n%s\nbefore:\n%s", bad, got, want)
		}
	}
}
