package e2e

import (
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// typesSince lists the types of the events after the first n.
func typesSince(t *testing.T, root string, n int) []string {
	t.Helper()
	return clitest.Types(t, root)[n:]
}

// jsonOut parses a command's --json answer.
func jsonOut(t *testing.T, r clitest.Result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.Stdout)
	}
	return m
}

func TestStaleRefusalWhileWaitingIsRecordedAsBlocked(t *testing.T) {
	for _, args := range [][]string{
		{"acquire", "nightly", "--wait", "30s", "--json"},
		{"run", "nightly", "--wait", "30s", "--json", "--", "true"},
	} {
		t.Run(args[0], func(t *testing.T) {
			root := t.TempDir()
			self := strconv.Itoa(os.Getpid())
			rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "nightly", "--ttl", "1", "--pid", self).Stdout)
			awaitState(t, root, "nightly", "stale", 15*time.Second)
			n := clitest.EventCount(t, root)
			r := clitest.Must(t, 4, root, args...)
			if got := jsonOut(t, r); got["error"] != "lock_stale" {
				t.Fatalf("answer: %v, want lock_stale", got)
			}
			if got := typesSince(t, root, n); !reflect.DeepEqual(got, []string{"acquire_blocked"}) {
				t.Fatalf("events after a stale refusal under --wait: %v, want one acquire_blocked", got)
			}
			b := lastBody(t, root, "acquire_blocked")
			waited, ok := b["waited_seconds"].(float64)
			if b["state"] != "stale" || !ok || waited < 0 || b["held_by"].(map[string]any)["request_id"] != rid {
				t.Fatalf("acquire_blocked: %v, want state stale, waited_seconds, held by %s", b, rid)
			}
			assertChain(t, root)
		})
	}
}

func TestHeartbeatByARequestThatNeverHeldTheLockIsNotALoss(t *testing.T) {
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self).Stdout)
	cases := []struct {
		name, lock, request, want string
	}{
		{"a typo in the request id", "deploy", "req_typo", "request req_typo does not hold lock deploy (never held it)"},
		{"a lock that never existed", "no-such-lock", rid, "request " + rid + " does not hold lock no-such-lock (never held it)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := clitest.EventCount(t, root)
			r := clitest.Must(t, 5, root, "heartbeat", c.lock, "--request-id", c.request)
			if !strings.Contains(r.Stderr, c.want) || strings.Contains(r.Stderr, "lost") {
				t.Fatalf("stderr %q, want %q and no word of a lost lock", r.Stderr, c.want)
			}
			if got := typesSince(t, root, n); len(got) != 0 {
				t.Fatalf("events after a heartbeat by a non-holder: %v, want none", got)
			}
			j := jsonOut(t, clitest.Must(t, 5, root, "heartbeat", c.lock, "--request-id", c.request, "--json"))
			if j["error"] != "not_holder" || !strings.Contains(j["message"].(string), c.want) {
				t.Fatalf("--json: %v, want not_holder saying %q", j, c.want)
			}
		})
	}
	// After its own release: the message names the release.
	clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid)
	relSeq := clitest.Strings(t, root, `SELECT seq FROM events WHERE type = 'lock_released'`)[0]
	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 5, root, "heartbeat", "deploy", "--request-id", rid)
	if want := "request " + rid + " does not hold lock deploy (released it at seq " + relSeq + ")"; !strings.Contains(r.Stderr, want) {
		t.Fatalf("stderr %q, want %q", r.Stderr, want)
	}
	if got := typesSince(t, root, n); len(got) != 0 {
		t.Fatalf("events after a heartbeat of a released lock: %v, want none", got)
	}
	assertChain(t, root)
}

func TestHeartbeatAfterTheLockWasTakenIsRecordedAsLost(t *testing.T) {
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self).Stdout)
	clitest.Must(t, 0, root, "heartbeat", "deploy", "--request-id", rid)
	clitest.Must(t, 0, root, "steal", "deploy", "--active", "--yes", "--reason", "takeover", "--pid", self)
	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 5, root, "heartbeat", "deploy", "--request-id", rid, "--json")
	if j := jsonOut(t, r); j["error"] != "lock_lost" {
		t.Fatalf("--json: %v, want lock_lost", j)
	}
	if got := typesSince(t, root, n); !reflect.DeepEqual(got, []string{"heartbeat_failed"}) {
		t.Fatalf("events after a heartbeat of a stolen lock: %v, want one heartbeat_failed", got)
	}
	if b := lastBody(t, root, "heartbeat_failed"); b["lock_lost"] != true || b["request_id"] != rid {
		t.Fatalf("heartbeat_failed: %v, want lock_lost by %s", b, rid)
	}
	// A lock force-released from its holder is lost too.
	rid2 := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "other", "--pid", self).Stdout)
	clitest.Must(t, 0, root, "release", "other", "--force", "--actor", "oncall")
	n = clitest.EventCount(t, root)
	r = clitest.Must(t, 5, root, "heartbeat", "other", "--request-id", rid2)
	if !strings.Contains(r.Stderr, "lost the lock") {
		t.Fatalf("stderr %q, want a lost lock", r.Stderr)
	}
	if got := typesSince(t, root, n); !reflect.DeepEqual(got, []string{"heartbeat_failed"}) {
		t.Fatalf("events after a heartbeat of a force-released lock: %v, want one heartbeat_failed", got)
	}
	assertChain(t, root)
}
