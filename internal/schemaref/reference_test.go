package schemaref

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

func TestEverySchemaCompiles(t *testing.T) {
	if err := CompileAll(); err != nil {
		t.Fatal(err)
	}
}

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
		{"zero failures", strings.Replace(string(good), `"consecutive_failures":3`, `"consecutive_failures":0`, 1), "/consecutive_failures"},
		{"extra field", strings.Replace(string(good), `"error":"busy"`, `"error":"busy","sneaky":1`, 1), "sneaky"},
		{"bad lock name", strings.Replace(string(good), `"lock_name":"deploy"`, `"lock_name":"Deploy"`, 1), "/lock_name"},
		{"wrong type const", strings.Replace(string(good), `"type":"heartbeat_failed"`, `"type":"lock_heartbeat"`, 1), "/type"},
		{"not json", `{"seq":`, "not JSON"},
		{"seq 3.0", strings.Replace(string(good), `"seq":1`, `"seq":3.0`, 1), "/seq: 3.0 is not valid 'int64': an integer must be written"},
		{"pid 1e0", strings.Replace(string(good), `"pid":1`, `"pid":1e0`, 1), "/pid: 1e0 is not valid 'int64'"},
		{"pid beyond int64", strings.Replace(string(good), `"pid":1`, `"pid":9223372036854775808`, 1), "/pid: 9223372036854775808 is not valid 'int64'"},
		{"schema_version 1.0", strings.Replace(string(good), `"schema_version":1`, `"schema_version":1.0`, 1), "/schema_version"},
		{"trailing }", string(good) + "}", "trailing data"},
		{"trailing ] garbage", string(good) + " ] x", "trailing data"},
		{"trailing object", string(good) + "\n{}", "trailing data"},
		{"pid 1e400000000", strings.Replace(string(good), `"pid":1`, `"pid":1e400000000`, 1), "/pid: number 1e400000000 has an exponent out of range"},
	} {
		err := ValidateEvent(events.HeartbeatFailed, []byte(c.body))
		var se *schema.Error
		if !errors.As(err, &se) || !errors.Is(err, schema.ErrSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a schema error naming %q", c.name, err, c.want)
		}
	}
	if err := ValidateEvent(events.HeartbeatFailed, append(good, " \r\n\t"...)); err != nil {
		t.Errorf("trailing white space refused: %v", err)
	}
	if err := Validate("no_such", good); !errors.Is(err, schema.ErrSchema) {
		t.Errorf("unknown schema: %v", err)
	}
}
