package events_test

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/schema"
)

// The schema files' patterns, which ValidateLockName and ValidateRequestID
// implemented with regexp before they were written by hand.
var (
	lockNameRE  = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$`)
	requestIDRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
)

// refLockName is events.LockNameRule written out by hand, without a
// regular expression: 1-128 bytes of a-z 0-9 _ -, first and last a-z 0-9.
func refLockName(s string) bool {
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if len(s) < 1 || len(s) > 128 || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// refRequestID: 1-128 bytes of A-Z a-z 0-9 _ . : -
func refRequestID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.:-", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// heartbeatBody is a schema-valid lock_heartbeat body with the given lock
// name and request id, to ask the schema what it thinks of them.
func heartbeatBody(t *testing.T, lock, req string) []byte {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	b, err := events.BuildBody(events.Envelope{EventID: events.NewULID(at), Seq: 1, Type: events.LockHeartbeat,
		SchemaVersion: events.SchemaVersion, At: events.FormatTime(at), LockName: lock, RequestID: req, Actor: "a",
		HostID: "h", PID: 1}, &events.Heartbeat{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkInvalid(t *testing.T, err error, field, value string) {
	t.Helper()
	var inv *events.InvalidError
	if !errors.Is(err, events.ErrInvalid) || !errors.As(err, &inv) || inv.Field != field {
		t.Fatalf("rejection of %q is %v (%T), want an *InvalidError for field %q wrapping ErrInvalid", value, err, err, field)
	}
	if inv.Rule == "" || !strings.Contains(err.Error(), field) {
		t.Fatalf("rejection of %q does not name the field and the rule: %q", value, err)
	}
}

var lockNameSeeds = []string{
	"deploy-prod", "a", "0", "a_b", "x-y_z9", strings.Repeat("a", 128), strings.Repeat("a", 129), "",
	"-a", "a-", "_a", "a_", "A", "Deploy", "a/b", "../x", "..", ".", "x.lock", "a b", "a\n", "\na", "a\x00",
	"ａ", "é", "a\u200bb", "x\r", "%2e%2e", "a\\b", "con", "nul-", strings.Repeat("ab-", 43),
}

func FuzzValidateLockName(f *testing.F) {
	for _, s := range lockNameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := events.ValidateLockName(s)
		if want := refLockName(s); (err == nil) != want {
			t.Fatalf("ValidateLockName(%q) = %v, the rule says valid=%v", s, err, want)
		}
		if want := lockNameRE.MatchString(s); (err == nil) != want {
			t.Fatalf("ValidateLockName(%q) = %v, the pattern says valid=%v", s, err, want)
		}
		if events.IsLockName(s) != (err == nil) || events.IsLockName([]byte(s)) != (err == nil) {
			t.Fatalf("IsLockName(%q) disagrees with ValidateLockName: %v", s, err)
		}
		if err != nil {
			checkInvalid(t, err, "lock name", s)
		} else {
			// A valid name is a plain file name inside locks/: no traversal,
			// no separator, no hidden file, nothing that cleans differently.
			p := filepath.Join("locks", s+".lock")
			if filepath.Dir(p) != "locks" || filepath.Base(p) != s+".lock" || strings.HasPrefix(s, ".") ||
				strings.ContainsAny(s, "/\\\x00.") {
				t.Fatalf("valid lock name %q escapes or hides: %s", s, p)
			}
		}
		if utf8.ValidString(s) {
			serr := schema.ValidateEvent(events.LockHeartbeat, heartbeatBody(t, s, "req_1"))
			if (serr == nil) != (err == nil) {
				t.Fatalf("lock name %q: ValidateLockName says %v, the event schema says %v", s, err, serr)
			}
		}
	})
}

var requestIDSeeds = []string{
	"req_01HX", "a", "A.b:c-d_e", strings.Repeat("r", 128), strings.Repeat("r", 129), "", "has space", "a/b",
	"a\n", "\x00", "é", "req'; DROP TABLE events;--", `"quoted"`, "a\tb", "..", "x%20y",
}

func FuzzValidateRequestID(f *testing.F) {
	for _, s := range requestIDSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := events.ValidateRequestID(s)
		if want := refRequestID(s); (err == nil) != want {
			t.Fatalf("ValidateRequestID(%q) = %v, the rule says valid=%v", s, err, want)
		}
		if want := requestIDRE.MatchString(s); (err == nil) != want {
			t.Fatalf("ValidateRequestID(%q) = %v, the pattern says valid=%v", s, err, want)
		}
		if err != nil {
			checkInvalid(t, err, "request id", s)
		}
		if utf8.ValidString(s) {
			serr := schema.ValidateEvent(events.LockHeartbeat, heartbeatBody(t, "x", s))
			if (serr == nil) != (err == nil) {
				t.Fatalf("request id %q: ValidateRequestID says %v, the event schema says %v", s, err, serr)
			}
		}
	})
}

// TestNameRulesMatchPatterns runs the fuzz targets' comparison with the
// patterns on every byte, and on every one-byte change of the seeds.
func TestNameRulesMatchPatterns(t *testing.T) {
	if !strings.Contains(events.LockNameRule, lockNameRE.String()) {
		t.Errorf("LockNameRule %q does not quote the pattern %s", events.LockNameRule, lockNameRE)
	}
	check := func(seeds []string, valid func(string) error, re *regexp.Regexp) {
		var inputs []string
		for c := range 256 {
			inputs = append(inputs, string(rune(c)), string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
		}
		for _, s := range seeds {
			for i := 0; i <= len(s); i++ {
				inputs = append(inputs, s[:i], s[i:])
				for _, c := range "aZ09_-.:/ \x00é" {
					inputs = append(inputs, s[:i]+string(c)+s[i:])
					if i < len(s) {
						inputs = append(inputs, s[:i]+string(c)+s[i+1:])
					}
				}
			}
		}
		for _, s := range inputs {
			if err := valid(s); (err == nil) != re.MatchString(s) {
				t.Errorf("%q: %v, the pattern %s says valid=%v", s, err, re, re.MatchString(s))
			}
		}
	}
	check(lockNameSeeds, events.ValidateLockName, lockNameRE)
	check(requestIDSeeds, events.ValidateRequestID, requestIDRE)
}
