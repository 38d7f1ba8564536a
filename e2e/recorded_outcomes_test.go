package e2e

// What the ledger records when a lock command does not do what was asked:
// a refusal (stale, not the holder), a heartbeat whose lock was lost, a
// release of a lock not held, a release reporting a job's failure.

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	t.Parallel()
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

func TestHeartbeatByARequestThatNeverHeldTheLockIsARefusalNotALoss(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self).Stdout)
	cases := []struct {
		name, lock, request, want, heldBy string
	}{
		{"a typo in the request id", "deploy", "req_typo", "request req_typo does not hold lock deploy (never held it)", rid},
		{"a lock that never existed", "no-such-lock", rid, "request " + rid + " does not hold lock no-such-lock (never held it)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := clitest.EventCount(t, root)
			r := clitest.Must(t, 5, root, "heartbeat", c.lock, "--request-id", c.request)
			if !strings.Contains(r.Stderr, c.want) || strings.Contains(r.Stderr, "lost") {
				t.Fatalf("stderr %q, want %q and no word of a lost lock", r.Stderr, c.want)
			}
			assertRefused(t, root, n, r, "heartbeat", c.request, c.heldBy)
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
	assertRefused(t, root, n, r, "heartbeat", rid, "")
	assertChain(t, root)
}

func TestHeartbeatAfterTheLockWasTakenIsRecordedAsLost(t *testing.T) {
	t.Parallel()
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
	clitest.Must(t, 0, root, "release", "other", "--force", "--yes", "--reason", "cleanup", "--actor", "oncall")
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

// shown is the error message a failed command printed.
func shown(r clitest.Result) string {
	return strings.TrimSuffix(strings.TrimPrefix(r.Stderr, "lockledger: "), "\n")
}

// assertRefused checks that the command r, run after the first n events,
// recorded exactly one action_refused: its action, the request that asked,
// the message the command printed, and the holder at the time (none when
// heldBy is "").
func assertRefused(t *testing.T, root string, n int, r clitest.Result, action, request, heldBy string) {
	t.Helper()
	if got := typesSince(t, root, n); !reflect.DeepEqual(got, []string{"action_refused"}) {
		t.Fatalf("events after a refused %s: %v, want one action_refused", action, got)
	}
	b := lastBody(t, root, "action_refused")
	if b["action"] != action || b["request_id"] != request || b["error"] != shown(r) {
		t.Fatalf("action_refused: %v, want action %s by %s with error %q", b, action, request, shown(r))
	}
	switch h, _ := b["held_by"].(map[string]any); {
	case heldBy == "" && (h != nil || b["state"] != "free"):
		t.Fatalf("action_refused: %v, want state free and no holder", b)
	case heldBy != "" && (h == nil || h["request_id"] != heldBy || b["state"] != "held"):
		t.Fatalf("action_refused: %v, want state held by %s", b, heldBy)
	}
}

func TestRefusedReleaseAndStealAreRecorded(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "app-prod", "--pid", self).Stdout)

	// A release by a request that never held it, while another holds it.
	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 5, root, "release", "app-prod", "--request-id", "req_other", "--actor", "mallory")
	assertRefused(t, root, n, r, "release", "req_other", rid)
	if b := lastBody(t, root, "action_refused"); b["actor"] != "mallory" {
		t.Fatalf("action_refused actor %v, want mallory (who asked)", b["actor"])
	}

	// A steal of a live holder without --active.
	n = clitest.EventCount(t, root)
	r = clitest.Must(t, 3, root, "steal", "app-prod", "--reason", "mine now", "--request-id", "req_thief", "--pid", self)
	if !strings.Contains(r.Stderr, "steal --active") {
		t.Fatalf("steal refusal does not say how to take it anyway: %s", r.Stderr)
	}
	assertRefused(t, root, n, r, "steal", "req_thief", rid)
	if st := statusJSON(t, root, "app-prod"); st["request_id"] != rid {
		t.Fatalf("holder after refusals: %v, want %s", st["request_id"], rid)
	}

	// A release by a request that lost the lock (it was stolen), now free.
	rid2 := strings.TrimSpace(clitest.Must(t, 0, root, "steal", "app-prod", "--active", "--yes", "--reason", "takeover", "--pid", self).Stdout)
	clitest.Must(t, 0, root, "release", "app-prod", "--request-id", rid2)
	n = clitest.EventCount(t, root)
	r = clitest.Must(t, 5, root, "release", "app-prod", "--request-id", rid, "--json")
	if j := jsonOut(t, r); j["error"] != "lock_lost" {
		t.Fatalf("--json: %v, want lock_lost", j)
	}
	if got := typesSince(t, root, n); !reflect.DeepEqual(got, []string{"action_refused"}) {
		t.Fatalf("events after a refused release: %v, want one action_refused", got)
	}
	if b := lastBody(t, root, "action_refused"); b["action"] != "release" || b["state"] != "free" || !strings.Contains(b["error"].(string), "lost the lock") {
		t.Fatalf("action_refused: %v, want a release of a lost lock, state free", b)
	}

	// A release of a lock that never existed, by a request that never held it.
	n = clitest.EventCount(t, root)
	r = clitest.Must(t, 5, root, "release", "no-such-lock", "--request-id", "req_typo")
	assertRefused(t, root, n, r, "release", "req_typo", "")
	assertChain(t, root)
}

func TestReleaseOfALockNotHeldSaysNothingToRelease(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self).Stdout)
	if j := jsonOut(t, clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid, "--json")); j["status"] != "released" {
		t.Fatalf("first release: %v, want released", j)
	}
	relSeq, _ := strconv.Atoi(clitest.Strings(t, root, `SELECT seq FROM events WHERE type = 'lock_released'`)[0])

	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid)
	if !strings.Contains(r.Stderr, "not held, nothing to release") || strings.Contains(r.Stderr, "INF released") {
		t.Fatalf("second release said %q, want not held, nothing to release", r.Stderr)
	}
	j := jsonOut(t, clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid, "--json"))
	if j["status"] != "not_held" || j["state"] != "free" || j["released_seq"] != float64(relSeq) {
		t.Fatalf("second release --json: %v, want not_held, free, released_seq %d", j, relSeq)
	}
	// --force on a free lock releases nothing either.
	j = jsonOut(t, clitest.Must(t, 0, root, "release", "deploy", "--force", "--yes", "--reason", "cleanup", "--json"))
	if j["status"] != "not_held" || j["state"] != "free" {
		t.Fatalf("release --force of a free lock: %v, want not_held", j)
	}
	if got := typesSince(t, root, n); len(got) != 0 {
		t.Fatalf("releases of a lock not held wrote %v, want nothing", got)
	}

	// Released, then taken by another: a second release is still a no-op, and
	// says who holds it now.
	other := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self).Stdout)
	n = clitest.EventCount(t, root)
	j = jsonOut(t, clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid, "--json"))
	if h, _ := j["held_by"].(map[string]any); j["status"] != "not_held" || j["state"] != "held" || h == nil || h["request_id"] != other {
		t.Fatalf("second release while %s holds it: %v, want not_held naming the holder", other, j)
	}
	if got := typesSince(t, root, n); len(got) != 0 {
		t.Fatalf("second release wrote %v, want nothing", got)
	}
	if st := statusJSON(t, root, "deploy"); st["request_id"] != other {
		t.Fatalf("holder after a second release by %s: %v, want %s", rid, st["request_id"], other)
	}
	assertChain(t, root)
}

func TestHeartbeatJSONSaysHeartbeat(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--pid", strconv.Itoa(os.Getpid())).Stdout)
	j := jsonOut(t, clitest.Must(t, 0, root, "heartbeat", "deploy", "--request-id", rid, "--json"))
	if j["status"] != "heartbeat" || j["request_id"] != rid || j["state"] != "held" {
		t.Fatalf("heartbeat --json: %v, want status heartbeat for %s", j, rid)
	}
}

func TestReleaseWithANonZeroExitCodeRecordsFailure(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	cases := []struct {
		args               []string
		result, failedStep string
		exitCode           float64
	}{
		{[]string{"--exit-code", "3"}, "failure", "", 3},
		{[]string{"--exit-code", "3", "--failure-step", "build"}, "failure", "build", 3},
		{[]string{"--exit-code", "0"}, "success", "", 0},
		{[]string{"--exit-code", "3", "--result", "success"}, "success", "", 3},
		{[]string{"--exit-code", "3", "--result", "cancelled"}, "cancelled", "", 3},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "job", "--pid", self).Stdout)
			j := jsonOut(t, clitest.Must(t, 0, root, append([]string{"release", "job", "--request-id", rid, "--json"}, c.args...)...))
			if j["result"] != c.result {
				t.Errorf("--json result %v, want %s", j["result"], c.result)
			}
			b := lastBody(t, root, "lock_released")
			step, _ := b["failure_step"].(string)
			if b["request_id"] != rid || b["result"] != c.result || b["exit_code"] != c.exitCode || step != c.failedStep {
				t.Fatalf("lock_released: %v, want result %s, exit_code %v, failure_step %q", b, c.result, c.exitCode, c.failedStep)
			}
		})
	}
}

func TestHeartbeatOfALockAnotherToolTookOverIsRecordedAsLost(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old, killOld := sleeper(t)
	clitest.Must(t, 0, root, "acquire", "j", "--request-id", "ours", "--pid", strconv.Itoa(old))
	killOld() // dead: tower-fleet may take the lock by its own rules
	other, _ := sleeper(t)
	takeOver(t, "tower-fleet", filepath.Join(root, "locks", "j.lock"), "j", other)

	// The heartbeat is the first writer to meet the take-over: it records the
	// displacement in the holder's name, and then the loss.
	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 5, root, "heartbeat", "j", "--request-id", "ours")
	if !strings.Contains(r.Stderr, "lost the lock") {
		t.Fatalf("stderr %q, want a lost lock", r.Stderr)
	}
	if got := typesSince(t, root, n); !reflect.DeepEqual(got, []string{"lock_released", "heartbeat_failed"}) {
		t.Fatalf("events: %v, want the displacement and heartbeat_failed", got)
	}
	if b := lastBody(t, root, "heartbeat_failed"); b["lock_lost"] != true {
		t.Fatalf("heartbeat_failed: %v, want lock_lost", b)
	}
	// Its release afterwards is refused as lost, and recorded.
	n = clitest.EventCount(t, root)
	r = clitest.Must(t, 5, root, "release", "j", "--request-id", "ours")
	assertRefused(t, root, n, r, "release", "ours", "other-tool-1")
	assertChain(t, root)
}
