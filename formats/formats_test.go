package formats

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
)

func TestNamesAndLookup(t *testing.T) {
	want := []string{"tower-fleet", "bso", "beads", "prodigy", "gitclaw"}
	if got := Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		f, err := Lookup(n)
		if err != nil || f.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n, f, err)
		}
	}
	for _, bad := range []string{"", "BSO", "yaml", "tower_fleet"} {
		_, err := Lookup(bad)
		if err == nil || !errors.Is(err, events.ErrInvalid) {
			t.Fatalf("Lookup(%q) error = %v, want ErrInvalid", bad, err)
		}
		for _, n := range want {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("Lookup(%q) error %q does not name %q", bad, err, n)
			}
		}
	}
}

func TestParseTarget(t *testing.T) {
	good := []struct{ in, format, path string }{
		{"bso:.sprint-running", "bso", ".sprint-running"},
		{"beads:/srv/repo/.beads/.exclusive-lock", "beads", "/srv/repo/.beads/.exclusive-lock"},
		{"prodigy:./resume_locks//mapreduce-123.lock", "prodigy", "resume_locks/mapreduce-123.lock"},
		{"gitclaw:../.GITCLAW/state/locks/42.lock", "gitclaw", "../.GITCLAW/state/locks/42.lock"},
		{"tower-fleet:/var/locks/a:b.lock", "tower-fleet", "/var/locks/a:b.lock"},
		{"bso:sprint running ✓", "bso", "sprint running ✓"},
	}
	for _, c := range good {
		got, err := ParseTarget(c.in)
		if err != nil || got != (events.Target{Format: c.format, Path: c.path}) {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %s:%s", c.in, got, err, c.format, c.path)
		}
		if err == nil && got.String() != c.format+":"+c.path {
			t.Errorf("Target.String() = %q", got.String())
		}
	}
	bad := []struct{ in, rule string }{
		{"", "FORMAT:PATH"},
		{".sprint-running", "FORMAT:PATH"},
		{"yaml:.sprint-running", `unknown format "yaml"`},
		{"BSO:.sprint-running", `unknown format "BSO"`},
		{":.sprint-running", "FORMAT before the colon is empty"},
		{"bso:", "PATH after the colon is empty"},
		{"bso:.sprint\x00running", "NUL"},
		{"bso:.sprint\nrunning", "control characters"},
		{"bso:dir/", "not a directory"},
		{"bso:.", "not a directory"},
		{"bso:/", "not a directory"},
		{"bso:a/..", "not a directory"},
		{"bso:..", "not a directory"},
		{"bso:\xff", "UTF-8"},
	}
	for _, c := range bad {
		_, err := ParseTarget(c.in)
		if err == nil {
			t.Errorf("ParseTarget(%q) accepted", c.in)
			continue
		}
		if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), "--file") || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("ParseTarget(%q) error %q: want ErrInvalid naming --file and %q", c.in, err, c.rule)
		}
	}
	_, err := ParseTarget("nope:x")
	for _, n := range Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("unknown-format error %q does not list %q", err, n)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	for format, want := range map[string]string{
		"tower-fleet": "locks/deploy.lock",
		"bso":         ".sprint-running",
		"beads":       ".beads/.exclusive-lock",
		"prodigy":     "resume_locks/deploy.lock",
		"gitclaw":     "state/locks/deploy.lock",
		"nope":        "",
	} {
		if got := DefaultPath(format, "deploy"); got != want {
			t.Errorf("DefaultPath(%q) = %q, want %q", format, got, want)
		}
	}
}

func TestForeignRequestIDIsValid(t *testing.T) {
	for _, f := range Names() {
		id := ForeignRequestID(f, 4194304, utc("2025-10-25T12:00:00Z"))
		if err := events.ValidateRequestID(id); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if id := ForeignRequestID("beads", 12345, utc("2025-10-25T12:00:00Z")); id != "beads:12345:1761393600" {
		t.Errorf("ForeignRequestID = %q", id)
	}
}

// Every format: Parse failures wrap ErrMalformed, and a file over the size
// bound is refused before it is decoded.
func TestParseRefusesHugeAndEmpty(t *testing.T) {
	huge := []byte("{" + strings.Repeat(" ", maxFile) + "}")
	for _, name := range Names() {
		f, _ := Lookup(name)
		for _, data := range [][]byte{nil, {}, []byte("   \n"), huge} {
			if _, err := f.Parse(data); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s.Parse(%d bytes) error = %v, want ErrMalformed", name, len(data), err)
			}
		}
	}
}

// Render refuses what a format cannot write.
func TestRenderRefuses(t *testing.T) {
	base := Holder{Lock: "42", RequestID: "req_1", Actor: "a", HostID: "h", PID: 1,
		CreatedAt: utc("2026-02-07T22:30:00Z"), TTL: time.Minute}
	cases := []struct {
		format string
		mod    func(*Holder)
	}{
		{"tower-fleet", func(h *Holder) { h.TTL = 0 }},
		{"tower-fleet", func(h *Holder) { h.Lock = "Bad Name" }},
		{"tower-fleet", func(h *Holder) { h.CreatedAt = time.Time{} }},
		{"bso", func(h *Holder) { h.PID = 0 }},
		{"bso", func(h *Holder) { h.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"beads", func(h *Holder) { h.Actor = "" }},
		{"beads", func(h *Holder) { h.HostID = "" }},
		{"beads", func(h *Holder) { h.PID = 0 }},
		{"prodigy", func(h *Holder) { h.PID = -1 }},
		{"prodigy", func(h *Holder) { h.Lock = "" }},
		{"gitclaw", func(h *Holder) { h.Lock = "deploy" }},
		{"gitclaw", func(h *Holder) { h.Lock = "042" }},
		{"gitclaw", func(h *Holder) { h.Metadata = map[string]string{"issue_number": "-1"} }},
	}
	for _, c := range cases {
		h := base
		c.mod(&h)
		f, _ := Lookup(c.format)
		if b, err := f.Render(h); err == nil {
			t.Errorf("%s.Render(%+v) = %q, want an error", c.format, h, b)
		}
	}
}

// notLocks are files that sit where a --file target may point by mistake:
// none of them may pass for a lock of any format, since the ledger only
// replaces a file at a target path that parses as a lock of its format.
func notLocks() map[string][]byte {
	sqlite := make([]byte, 4096) // page 1 of an SQLite database of another application
	copy(sqlite, "SQLite format 3\x00\x10\x00\x01\x01\x00\x40\x20\x20\x00\x00\x00\x02\x00\x00\x00\x02")
	copy(sqlite[3900:], "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, pid INTEGER, acquiredAt TEXT)")
	random := make([]byte, 512)
	var x uint64 = 0x9e3779b97f4a7c15
	for i := range random {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		random[i] = byte(x)
	}
	return map[string][]byte{
		"yaml config": []byte("server:\n  port: 8080\n  host: 0.0.0.0\ndatabase:\n  url: postgres://db/app\n"),
		"yaml config with pid and started_at": []byte(
			"service: api\npid: 4242\nstarted_at: 2026-02-07T22:30:00Z\nlog_level: debug\n"),
		"passwd": []byte("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"),
		"sqlite database":           sqlite,
		"random bytes":              random,
		"package.json":              []byte(`{"name": "app", "version": "1.0.0", "scripts": {"start": "node ."}}` + "\n"),
		"json state with a date":    []byte(`{"acquiredAt": "2026-02-07T22:30:00.123Z", "status": "ok", "pid": 12}` + "\n"),
		"json with gitclaw members": []byte(`{"issueNumber": 42, "acquiredAt": "2026-02-07T22:30:00.123Z", "title": "bug"}`),
		"shell script":              []byte("#!/bin/sh\nset -e\nexec ./deploy.sh \"$@\"\n"),
		"ini file":                  []byte("[core]\n\trepositoryformatversion = 0\n\tbare = false\n"),
	}
}

func TestParseRefusesFilesThatAreNotLocks(t *testing.T) {
	for what, data := range notLocks() {
		for _, name := range Names() {
			f, _ := Lookup(name)
			if h, err := f.Parse(data); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s.Parse(%s) = %+v, %v; want ErrMalformed", name, what, h, err)
			}
		}
	}
}

// TestCarriesTTLSaysWhichParsedHoldersHaveOne: a holder rendered with a
// TTL and parsed back has one exactly when its format carries a TTL.
func TestCarriesTTLSaysWhichParsedHoldersHaveOne(t *testing.T) {
	at := utc("2026-02-07T22:30:00Z")
	h := Holder{Lock: "42", RequestID: "req-1", Actor: "a", HostID: "h", PID: 42, CreatedAt: at, HeartbeatAt: at,
		TTL: 90 * time.Second, Metadata: map[string]string{}}
	for _, name := range Names() {
		f, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := f.Render(h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := f.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if (got.TTL != 0) != CarriesTTL(name) {
			t.Errorf("%s: parsed TTL %s, CarriesTTL %v", name, got.TTL, CarriesTTL(name))
		}
	}
}
