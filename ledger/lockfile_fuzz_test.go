package ledger_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

func fuzzLockRecord() events.Record {
	return events.Record{LockVersion: "v1", LockName: "money-tracker-production", RequestID: "req_01HX", Actor: "claude-code",
		Intent: "deploy-app", IntentVersion: "1.2.0", HostID: "host-a", PID: 4242, CreatedAt: "2026-01-02T03:04:05Z",
		LastHeartbeatAt: "2026-01-02T03:05:05Z", TTLSeconds: 900, Metadata: map[string]string{"commit": "abc123"}}
}

// lockFileSeeds: valid, truncated, binary, huge, wrong types, extra fields.
func lockFileSeeds() [][]byte {
	valid := fuzzLockRecord().File()
	compact := bytes.Join(bytes.Fields(valid), nil)
	swap := func(from, to string) []byte { return bytes.Replace(valid, []byte(from), []byte(to), 1) }
	seeds := [][]byte{
		valid, compact, valid[:len(valid)/2], valid[:len(valid)-3], valid[1:], {}, []byte("null"), []byte("[]"),
		[]byte("{}"), []byte("{not json"), []byte("\x00\x01\x02\xff\xfe\xfd"), []byte("\xef\xbb\xbf" + string(valid)),
		append(append([]byte{}, valid...), valid...),
		swap(`"pid": 4242`, `"pid": "4242"`), swap(`"pid": 4242`, `"pid": -1`), swap(`"pid": 4242`, `"pid": 4242.0`),
		swap(`"pid": 4242`, `"pid": 1e30`), swap(`"ttl_seconds": 900`, `"ttl_seconds": 0`),
		swap(`"ttl_seconds": 900`, `"ttl_seconds": 1.5`), swap(`"lock_version": "v1"`, `"lock_version": "v2"`),
		swap(`"lock_name": "money-tracker-production"`, `"lock_name": "../../etc/passwd"`),
		swap(`"created_at": "2026-01-02T03:04:05Z"`, `"created_at": "yesterday"`),
		swap(`"created_at": "2026-01-02T03:04:05Z"`, `"created_at": "2026-01-02T03:04:05.123+02:00"`),
		swap(`"commit": "abc123"`, `"commit": 7, "n": null, "o": {"a": [1, 2]}, "b": true`),
		swap(`"metadata": {`, `"extra": 1, "metadata": {`),
		swap(`"request_id": "req_01HX"`, `"request_id": ""`),
		swap(`"request_id": "req_01HX"`, `"request_id": "req'; DROP TABLE events;--"`),
		swap(`"actor": "claude-code"`, `"actor": "\u0000\ud800"`),
		swap(`"metadata": {`, `"metadata": null, "x": {`),
		[]byte(strings.Replace(string(valid), `"metadata": {`, `"metadata": {"pad": "`+strings.Repeat("x", 70<<10)+`", `, 1)),
		[]byte(strings.Repeat(" ", 64<<10) + string(compact)),
		[]byte(`{"lock_version":"v1"` + strings.Repeat(`,"lock_version":"v1"`, 1000) + `}`),
		swap(`"pid": 4242`, `"pid": 42e99`), swap(`"ttl_seconds": 900`, `"ttl_seconds": 9e2`),
	}
	return seeds
}

// parseLockFile is ledger.ParseLockFile with a panic reported as a
// failure naming the input.
func parseLockFile(t *testing.T, data []byte) (rec events.Record, err error) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("ParseLockFile panics on %.200q: %v", data, r)
		}
	}()
	return ledger.ParseLockFile(data)
}

// TestParseLockFileNeverPanics: found by FuzzParseLockFile. A lock file
// with a number such as 1e400000000 (any field) made the JSON Schema
// library panic (nil *big.Rat) inside ParseLockFile, so one foreign lock
// file crashed every command that reads the locks directory.
func TestParseLockFileNeverPanics(t *testing.T) {
	t.Parallel()
	for _, num := range []string{"1e400000000", "7E7777777777", "1e-400000000", "-1E+99999999"} {
		data := bytes.Replace(fuzzLockRecord().File(), []byte(`"pid": 4242`), []byte(`"pid": `+num), 1)
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			_, _ = ledger.ParseLockFile(data)
		}()
		if panicked != nil {
			t.Fatalf("ParseLockFile panics on a lock file with \"pid\": %s: %v", num, panicked)
		}
	}
}

func FuzzParseLockFile(f *testing.F) {
	for _, s := range lockFileSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := parseLockFile(t, data) // must never panic
		if err != nil {
			return
		}
		if err := events.ValidateLockName(rec.LockName); err != nil {
			t.Fatalf("accepted a lock file whose lock_name is not a lock name: %v", err)
		}
		if rec.Metadata == nil || rec.LockVersion != events.LockVersion || rec.TTLSeconds < 1 || rec.PID < 0 {
			t.Fatalf("accepted record breaks the v1 rules: %+v", rec)
		}
		out := rec.File()
		rec2, err := parseLockFile(t, out)
		if err != nil {
			t.Fatalf("accepted file re-renders to one ParseLockFile refuses: %v\ninput: %q\nre-rendered: %s", err, data, out)
		}
		if !reflect.DeepEqual(rec, rec2) {
			t.Fatalf("re-rendered file parses differently:\n first %+v\nsecond %+v", rec, rec2)
		}
		if again := rec2.File(); !bytes.Equal(again, out) {
			t.Fatalf("File() is not a fixed point:\n%s\n%s", out, again)
		}
	})
}

// TestParsedLockFileReRendersUnderTheSizeLimit: a compact foreign lock file
// just under the 64 KiB limit that Record.File() would indent (and whose
// non-string metadata it would quote) past the limit ParseLockFile
// enforces is refused, naming the rule; one whose rendering fits is
// accepted, and its rendering reads back.
func TestParsedLockFileReRendersUnderTheSizeLimit(t *testing.T) {
	t.Parallel()
	valid := fuzzLockRecord().File()
	compact := func(entries int) []byte {
		var md strings.Builder
		for i := 0; i < entries; i++ {
			if i > 0 {
				md.WriteByte(',')
			}
			fmt.Fprintf(&md, `"%d":0`, i)
		}
		return bytes.Join(bytes.Fields(bytes.Replace(valid, []byte(`"commit": "abc123"`), []byte(md.String()), 1)), nil)
	}
	n := 0
	for len(compact(n+1)) < 60<<10 {
		n += 256
	}
	data := compact(n)
	if len(data) > 64<<10 {
		t.Fatalf("test setup: %d bytes", len(data))
	}
	if rec, err := ledger.ParseLockFile(data); err == nil {
		t.Fatalf("accepted a %d-byte lock file that re-renders via Record.File() to %d bytes, over the limit", len(data), len(rec.File()))
	} else if !strings.Contains(err.Error(), "once written in the v1 layout") {
		t.Fatalf("refused a %d-byte lock file without naming the rule: %v", len(data), err)
	}
	lo, hi := 0, n // the largest map whose rendering fits is accepted, and so is its rendering
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, err := ledger.ParseLockFile(compact(mid)); err == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	rec, err := ledger.ParseLockFile(compact(lo))
	if err != nil || lo == 0 {
		t.Fatalf("largest accepted map has %d entries (of %d): %v", lo, n, err)
	}
	out := rec.File()
	if _, err := ledger.ParseLockFile(out); err != nil {
		t.Fatalf("accepted lock file re-renders via Record.File() to %d bytes, which ParseLockFile refuses: %v", len(out), err)
	}
	if len(out) <= (64<<10)-32 {
		t.Errorf("the largest accepted map renders to only %d bytes", len(out))
	}
}
