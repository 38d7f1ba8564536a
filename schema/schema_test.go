package schema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/schemaref"
	"github.com/lockledger/lockledger/schema"
)

// TestValidateNamesTheFieldAndRule: both validators, schema's and the
// library's reference (internal/schemaref), refuse each bad body with a
// *schema.Error naming the field and the rule, each in its own words.
func TestValidateNamesTheFieldAndRule(t *testing.T) {
	env := events.Envelope{EventID: "01M82NQNZDDVC3QZH7KVMR0924", Seq: 1, Type: events.HeartbeatFailed, SchemaVersion: 1,
		At: "2026-11-22T22:23:54.861197406Z", LockName: "deploy", RequestID: "req_1", Actor: "a", HostID: "h", PID: 1}
	good, err := events.BuildBody(env, &events.HeartbeatFailedPayload{ConsecutiveFailures: 3, Error: "busy", LockLost: false})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string { return strings.Replace(string(good), old, new, 1) }
	validators := []struct {
		name     string
		validate func(name string, doc []byte) error
	}{{"schema", schema.Validate}, {"schemaref", schemaref.Validate}}
	cases := []struct {
		name string
		body string
		want [2]string // schema's words, the reference's
	}{
		{"zero failures", edit(`"consecutive_failures":3`, `"consecutive_failures":0`), [2]string{"/consecutive_failures: minimum", "/consecutive_failures"}},
		{"extra field", edit(`"error":"busy"`, `"error":"busy","sneaky":1`), [2]string{`unevaluatedProperties: property "sneaky"`, "sneaky"}},
		{"bad lock name", edit(`"lock_name":"deploy"`, `"lock_name":"Deploy"`), [2]string{"/lock_name: pattern", "/lock_name"}},
		{"wrong type const", edit(`"type":"heartbeat_failed"`, `"type":"lock_heartbeat"`), [2]string{"/type: const", "/type"}},
		{"not json", `{"seq":`, [2]string{"not JSON", "not JSON"}},
		{"seq 3.0", edit(`"seq":1`, `"seq":3.0`), [2]string{`/seq: format: 3.0 is not valid "int64": ` + schema.Int64Rule, "/seq: 3.0 is not valid 'int64': an integer must be written"}},
		{"pid 1e0", edit(`"pid":1`, `"pid":1e0`), [2]string{`/pid: format: 1e0 is not valid "int64"`, "/pid: 1e0 is not valid 'int64'"}},
		{"pid beyond int64", edit(`"pid":1`, `"pid":9223372036854775808`), [2]string{`/pid: format: 9223372036854775808 is not valid "int64"`, "/pid: 9223372036854775808 is not valid 'int64'"}},
		{"schema_version 1.0", edit(`"schema_version":1`, `"schema_version":1.0`), [2]string{"/schema_version: format", "/schema_version"}},
		{"pid 1e400000000", edit(`"pid":1`, `"pid":1e400000000`), [2]string{"/pid: type: number 1e400000000 has an exponent out of range", "/pid: number 1e400000000 has an exponent out of range"}},
		{"trailing }", string(good) + "}", [2]string{"trailing data", "trailing data"}},
		{"trailing ] garbage", string(good) + " ] x", [2]string{"trailing data", "trailing data"}},
		{"trailing object", string(good) + "\n{}", [2]string{"trailing data", "trailing data"}},
	}
	rec := events.Record{LockVersion: "v1", LockName: "deploy", RequestID: "r", Actor: "a", HostID: "h", PID: 1,
		CreatedAt: "2026-01-02T03:04:05Z", LastHeartbeatAt: "2026-01-02T03:04:05Z", TTLSeconds: 60, Metadata: map[string]string{}}
	for i, v := range validators {
		validate := func(doc []byte) error { return v.validate(string(events.HeartbeatFailed), doc) }
		if err := validate(good); err != nil {
			t.Fatalf("%s: valid body refused: %v", v.name, err)
		}
		for _, c := range cases {
			err := validate([]byte(c.body))
			var se *schema.Error
			if !errors.As(err, &se) || se.Schema != string(events.HeartbeatFailed) || !errors.Is(err, schema.ErrSchema) ||
				!strings.Contains(err.Error(), c.want[i]) {
				t.Errorf("%s: %s: %v, want a schema error naming %q", v.name, c.name, err, c.want[i])
			}
		}
		if err := validate(append(good, " \r\n\t"...)); err != nil {
			t.Errorf("%s: trailing white space refused: %v", v.name, err)
		}
		for _, name := range []string{"no_such", "defs", "envelope", ""} {
			if err := v.validate(name, good); !errors.Is(err, schema.ErrSchema) || !strings.Contains(err.Error(), "no such schema") {
				t.Errorf("%s: schema %q: %v", v.name, name, err)
			}
		}
		if err := v.validate(schema.LockFile, rec.File()); err != nil {
			t.Errorf("%s: lock file refused: %v", v.name, err)
		}
		if err := v.validate(schema.LockFile, good); !errors.Is(err, schema.ErrSchema) || !strings.Contains(err.Error(), "schema lock_v1:") {
			t.Errorf("%s: event as a lock file: %v", v.name, err)
		}
	}
}
