package events_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/schemaref"
	"github.com/lockledger/lockledger/schema"
)

// sampleBodies are schema-valid bodies of every event type, as the ledger
// writes them.
func sampleBodies(tb testing.TB) map[events.Type][]byte {
	tb.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	code := 3
	rec := events.Record{LockVersion: "v1", LockName: "deploy", RequestID: "req_old", Actor: "ci", Intent: "deploy",
		IntentVersion: "1", HostID: "host-a", PID: 41, CreatedAt: "2026-01-02T03:00:00Z",
		LastHeartbeatAt: "2026-01-02T03:01:00Z", TTLSeconds: 60, Metadata: map[string]string{"commit": "abc"}}
	acq := events.Acquired{TTLSeconds: 900, Intent: "deploy", IntentVersion: "1.2", FencingToken: 7,
		Metadata: map[string]string{"k": "v", "quote": `it's "x"`}, PIDStart: "12345", BootID: "b00t"}
	holder := events.HolderOf(rec)
	payloads := map[events.Type]any{
		events.LockAcquired:  &acq,
		events.LockHeartbeat: &events.Heartbeat{},
		events.LockStolen: &events.Stolen{Acquired: acq, PreviousLock: rec, PreviousLockHash: events.LockFileHash(rec.File()),
			Reason: events.ReasonHolderDead, Note: "gone"},
		events.LockReleased: &events.Released{HeldDurationSeconds: 12.5, Result: events.ResultFailure,
			FailureStep: "migrate", ExitCode: &code, Forced: true, ReleasedRequestID: "req_old", FencingToken: 7},
		events.HeartbeatFailed: &events.HeartbeatFailedPayload{ConsecutiveFailures: 3, Error: "database is locked", LockLost: true},
		events.AcquireBlocked: &events.Blocked{HeldBy: new(events.HolderOf(rec)), State: "stale", WaitedSeconds: 1.5,
			Foreign: true},
		events.ActionRefused: &events.Refused{Action: events.ActionSteal, Error: "holder is alive", State: "held",
			HeldBy: &holder},
		events.LockProjected: &events.Projected{Changes: []string{"lock file restored"},
			MovedAside: "/r/locks/deploy.lock.corrupt-20260102T030405Z", BrokenChainAccepted: true, FirstBadSeq: 3},
		events.JobProcesses: &events.JobProcessesPayload{JobRequestID: "req_old", PIDs: []int{41, 43}, Action: events.JobKilled,
			Note: "left the process group"},
		events.LedgerExported: &events.Exported{Since: "2026-01-02T00:00:00.000000000Z", FirstSeq: 1, LastSeq: 9, Events: 9,
			Format: "csv", Destination: "/srv/audit.csv"},
		events.LedgerVerified: &events.Verified{Result: events.AuditFailed, Events: 9, Problems: 1, FirstBadSeq: 3,
			FirstSeq: 1, LastSeq: 9, HeadHash: strings.Repeat("0f", 32)},
		events.LedgerProjected: &events.LedgerProjectedPayload{Result: events.AuditOK, Events: 9, Locks: 1, RowsChanged: 1},
		events.LedgerPruned: &events.Pruned{FirstSeq: 1, LastSeq: 8, Events: 8, HeadHash: "abababababababababababababababababababababababababababababababab", File: "/srv/archive.jsonl",
			Note: events.PruneNote("abababababababababababababababababababababababababababababababab", "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd")},
		events.FenceRejected: &events.FenceRejectedPayload{Fence: events.FenceFileWrite, Resource: "/srv/app/config.json",
			StaleToken: 7, CurrentToken: 9},
		events.SignerAdded:   &events.Signer{Key: "ops@host-a+0a1b2c3d+AQID", Role: events.RoleOwner, Statement: "lockledger signer/v1\n"},
		events.SignerRemoved: &events.Signer{Key: "ops@host-a+0a1b2c3d+AQID", Role: "host", Statement: "lockledger signer/v1\n"},
		events.LedgerUnpruned: &events.Pruned{FirstSeq: 1, LastSeq: 8, Events: 8, HeadHash: "abababababababababababababababababababababababababababababababab", File: "/srv/archive.jsonl",
			Note: events.PruneNote("abababababababababababababababababababababababababababababababab", "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd")},
	}
	out := map[events.Type][]byte{}
	for i, typ := range events.Types {
		env := events.Envelope{EventID: events.NewULID(at), Seq: int64(i + 1), Type: typ, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(at), LockName: "deploy", RequestID: "req_01", Actor: "O'Brien", HostID: "host-a", PID: 42}
		if typ.LedgerWide() {
			env.LockName = ""
		}
		// The heartbeat stays as bodies were written before uid and user
		// (type is its last member, which the cases below edit).
		if typ != events.LockHeartbeat {
			env.SetOSUser(1000, "o'brien")
		}
		b, err := events.BuildBody(env, payloads[typ])
		if err != nil {
			tb.Fatal(err)
		}
		if err := schema.ValidateEvent(typ, b); err != nil {
			tb.Fatalf("sample %s is not schema-valid: %v", typ, err)
		}
		out[typ] = b
	}
	return out
}

// validateEvent is schema.ValidateEvent, failing the test if it panics.
func validateEvent(t *testing.T, typ events.Type, body []byte) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("schema.ValidateEvent(%s) panics: %v\n%q", typ, r, body)
		}
	}()
	return schema.ValidateEvent(typ, body)
}

func FuzzDecodeEvent(f *testing.F) {
	for _, b := range sampleBodies(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(bytes.Replace(b, []byte(`"seq":`), []byte(`"seq":-`), 1))
		f.Add(bytes.Replace(b, []byte(`"schema_version":1`), []byte(`"schema_version":"1"`), 1))
		f.Add(append(append([]byte{}, b[:len(b)-1]...), []byte(`,"extra":true}`)...))
		f.Add(append(append([]byte{}, b...), b...))
		f.Add(append(append([]byte{}, b...), "} x"...))
		f.Add(bytes.Replace(b, []byte(`"pid":42`), []byte(`"pid":42e0`), 1))
		f.Add(bytes.Replace(b, []byte(`"schema_version":1`), []byte(`"schema_version":1.0`), 1))
	}
	for _, s := range []string{"", "{}", "null", "[]", "0", `"x"`, `{"type":"lock_acquired"}`, `{"type":"nope"}`,
		`{"type":"lock_released","result":7}`, "\xff\xfe{", `{"type":"lock_stolen","previous_lock":[]}`,
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		env0, p0, err0 := events.Decode(body) // must never panic
		if err0 == nil && (p0 == nil || !env0.Type.Valid()) {
			t.Fatalf("Decode accepted %q with type %q and payload %T", body, env0.Type, p0)
		}
		for _, typ := range events.Types {
			if validateEvent(t, typ, body) != nil {
				continue
			}
			env, p, err := events.Decode(body)
			if err != nil {
				t.Fatalf("%s body validates against its schema but does not decode: %v\n%s", typ, err, body)
			}
			if env.Type != typ {
				t.Fatalf("body valid as %s decodes as %s", typ, env.Type)
			}
			if got, want := fmt.Sprintf("%T", p), fmt.Sprintf("%T", decodedSample(t, typ)); got != want {
				t.Fatalf("%s decodes to %s, want %s", typ, got, want)
			}
		}
	})
}

func decodedSample(t *testing.T, typ events.Type) any {
	_, p, err := events.Decode(sampleBodies(t)[typ])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSchemaValidBodiesDecode: every body the schema accepts must decode
// (the fuzz property), and validation must never panic. Each case is a body
// on the edge between the two (found by FuzzDecodeEvent) or one that can
// make the schema library panic; each must be refused by
// schema.ValidateEvent with a schema error that names the field (want), and
// by the library.
func TestSchemaValidBodiesDecode(t *testing.T) {
	samples := sampleBodies(t)
	for _, c := range []struct {
		typ            events.Type
		from, to, want string
	}{
		{events.LockHeartbeat, `"seq":2`, `"seq":2.0`, `/seq: format: 2.0 is not valid "int64"`},
		{events.LockHeartbeat, `"pid":42`, `"pid":42e0`, `/pid: format: 42e0 is not valid "int64"`},
		{events.LockHeartbeat, `"pid":42`, `"pid":99999999999999999999`, `/pid: format: 99999999999999999999 is not valid "int64"`},
		{events.LockHeartbeat, `"schema_version":1`, `"schema_version":1.0`, "/schema_version:"},
		{events.LockHeartbeat, `"type":"lock_heartbeat"}`, `"type":"lock_heartbeat"}}`, "trailing data"},
		{events.LockHeartbeat, `"type":"lock_heartbeat"}`, `"type":"lock_heartbeat"}] trailing garbage`, "trailing data"},
		{events.LockHeartbeat, `"pid":42`, `"pid":1e400000000`, "/pid"},
		{events.LockReleased, `"exit_code":3`, `"exit_code":3.0`, `/exit_code: format: 3.0 is not valid "int64"`},
		{events.LockReleased, `"held_duration_seconds":12.5`, `"held_duration_seconds":1e400`, `/held_duration_seconds: format: 1e400 is not valid "float64"`},
		{events.AcquireBlocked, `"waited_seconds":1.5`, `"waited_seconds":2e308`, `/waited_seconds: format: 2e308 is not valid "float64"`},
		{events.AcquireBlocked, `"pid":41`, `"pid":41e0`, `/held_by/pid: format: 41e0 is not valid "int64"`},
		{events.LockStolen, `"pid":41`, `"pid":41.0`, `/previous_lock/pid: format: 41.0 is not valid "int64"`},
		{events.LockStolen, `"commit":"abc"`, `"commit":7`, "/previous_lock/metadata/commit:"},
		{events.LockAcquired, `"ttl_seconds":900`, `"ttl_seconds":9e2`, `/ttl_seconds: format: 9e2 is not valid "int64"`},
		{events.JobProcesses, `"pids":[41,`, `"pids":[41.0,`, `/pids/0: format: 41.0 is not valid "int64"`},
		{events.JobProcesses, `"pids":[41,43]`, `"pids":[41,1e400000000]`, "/pids/1"},
		{events.LockProjected, `"first_bad_seq":3`, `"first_bad_seq":3e0`, `/first_bad_seq: format: 3e0 is not valid "int64"`},
		{events.ActionRefused, `"pid":41`, `"pid":41e0`, `/held_by/pid: format: 41e0 is not valid "int64"`},
	} {
		sample := samples[c.typ]
		body := bytes.Replace(sample, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(body, sample) {
			t.Fatalf("%s sample has no %s", c.typ, c.from)
		}
		err := validateEvent(t, c.typ, body)
		if err == nil {
			_, _, derr := events.Decode(body)
			t.Errorf("%s %s: schema.ValidateEvent accepts it (events.Decode: %v)", c.typ, c.to, derr)
			continue
		}
		if !errors.Is(err, schema.ErrSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want a schema error saying %q", c.typ, c.to, err, c.want)
		}
		if rerr := schemaref.ValidateEvent(c.typ, body); !errors.Is(rerr, schema.ErrSchema) {
			t.Errorf("%s %s: the schema library: %v, want a schema error", c.typ, c.to, rerr)
		}
	}
	hb := samples[events.LockHeartbeat]
	if err := validateEvent(t, events.LockHeartbeat, append(hb[:len(hb):len(hb)], " \n"...)); err != nil {
		t.Errorf("trailing white space refused: %v", err)
	}
}
