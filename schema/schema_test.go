package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
)

func TestValidateNamesTheFieldAndRule(t *testing.T) {
	env := events.Envelope{EventID: "01M82NQNZDDVC3QZH7KVMR0924", Seq: 1, Type: events.HeartbeatFailed, SchemaVersion: 1,
		At: "2026-11-22T22:23:54.861197406Z", LockName: "deploy", RequestID: "req_1", Actor: "a", HostID: "h", PID: 1}
	good, err := events.BuildBody(env, &events.HeartbeatFailedPayload{ConsecutiveFailures: 3, Error: "busy", LockLost: false})
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateEvent(events.HeartbeatFailed, good); err != nil {
		t.Fatalf("valid body refused: %v", err)
	}
	for _, c := range []struct {
		name string
		body string
		want string
	}{
		{"zero failures", strings.Replace(string(good), `"consecutive_failures":3`, `"consecutive_failures":0`, 1), "/consecutive_failures: minimum"},
		{"extra field", strings.Replace(string(good), `"error":"busy"`, `"error":"busy","sneaky":1`, 1), `unevaluatedProperties: property "sneaky"`},
		{"bad lock name", strings.Replace(string(good), `"lock_name":"deploy"`, `"lock_name":"Deploy"`, 1), "/lock_name: pattern"},
		{"wrong type const", strings.Replace(string(good), `"type":"heartbeat_failed"`, `"type":"lock_heartbeat"`, 1), "/type: const"},
		{"not json", `{"seq":`, "not JSON"},
		{"seq 3.0", strings.Replace(string(good), `"seq":1`, `"seq":3.0`, 1), `/seq: format: 3.0 is not valid "int64": ` + Int64Rule},
		{"pid 1e0", strings.Replace(string(good), `"pid":1`, `"pid":1e0`, 1), `/pid: format: 1e0 is not valid "int64"`},
		{"pid beyond int64", strings.Replace(string(good), `"pid":1`, `"pid":9223372036854775808`, 1), `/pid: format: 9223372036854775808 is not valid "int64"`},
		{"schema_version 1.0", strings.Replace(string(good), `"schema_version":1`, `"schema_version":1.0`, 1), "/schema_version: format"},
		{"pid 1e400000000", strings.Replace(string(good), `"pid":1`, `"pid":1e400000000`, 1), "/pid: type: number 1e400000000 has an exponent out of range"},
		{"trailing }", string(good) + "}", "trailing data"},
		{"trailing ] garbage", string(good) + " ] x", "trailing data"},
		{"trailing object", string(good) + "\n{}", "trailing data"},
	} {
		err := ValidateEvent(events.HeartbeatFailed, []byte(c.body))
		var se *Error
		if !errors.As(err, &se) || se.Schema != string(events.HeartbeatFailed) || !errors.Is(err, ErrSchema) ||
			!strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a schema error naming %q", c.name, err, c.want)
		}
	}
	if err := ValidateEvent(events.HeartbeatFailed, append(good, " \r\n\t"...)); err != nil {
		t.Errorf("trailing white space refused: %v", err)
	}
	for _, name := range []string{"no_such", "defs", "envelope", ""} {
		if err := Validate(name, good); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "no such schema") {
			t.Errorf("schema %q: %v", name, err)
		}
	}
	rec := events.Record{LockVersion: "v1", LockName: "deploy", RequestID: "r", Actor: "a", HostID: "h", PID: 1,
		CreatedAt: "2026-01-02T03:04:05Z", LastHeartbeatAt: "2026-01-02T03:04:05Z", TTLSeconds: 60, Metadata: map[string]string{}}
	if err := Validate(LockFile, rec.File()); err != nil {
		t.Errorf("lock file refused: %v", err)
	}
	if err := Validate(LockFile, good); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "schema lock_v1:") {
		t.Errorf("event as a lock file: %v", err)
	}
}
