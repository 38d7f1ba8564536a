package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/clitest"
)

// futureTowerFleetFile is another host's tower-fleet lock whose
// last_heartbeat_at is in 2030: a clock set wrong, or a file written by
// hand, never a live holder's heartbeat.
func futureTowerFleetFile(t *testing.T, lock string) []byte {
	t.Helper()
	h := formats.Holder{Lock: lock, RequestID: "req_from_2030", Actor: "skewed-host", Intent: "deploy", IntentVersion: "1",
		HostID: "elsewhere", PID: 4242, CreatedAt: time.Now().Add(-time.Minute), HeartbeatAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		TTL: 900 * time.Second}
	b, err := formats.TowerFleet.Render(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// initLedger makes root a ledger's root (a lock taken and given back).
func initLedger(t *testing.T, root string) {
	t.Helper()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "init", "--request-id", "req_init", "--pid", self)
	clitest.Must(t, 0, root, "release", "init", "--request-id", "req_init")
}

func TestAHeartbeatFromTheFutureIsStaleInTheLocksDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	initLedger(t, root)
	path := filepath.Join(root, "locks", "prod.lock")
	file := futureTowerFleetFile(t, "prod")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())

	text := clitest.Must(t, 0, root, "status", "prod").Stdout
	if !strings.Contains(text, "prod: stale") || !strings.Contains(text, "in the future") || strings.Contains(text, "0s ago") {
		t.Fatalf("status of a heartbeat in 2030 must say stale and in the future:\n%s", text)
	}
	st := statusJSON(t, root, "prod")
	if st["state"] != events.StateStale {
		t.Fatalf("status --json: %v, want stale", st)
	}
	if age, _ := st["heartbeat_age_seconds"].(float64); age >= 0 {
		t.Fatalf("heartbeat_age_seconds %v, want negative (the heartbeat is in the future)", st["heartbeat_age_seconds"])
	}
	if since, _ := st["stale_since"].(string); since == "" || strings.HasPrefix(since, "2030") {
		t.Fatalf("stale_since %q: a heartbeat too far ahead is stale from now, not from 2030", since)
	}
	if list := clitest.Must(t, 0, root, "list").Stdout; !strings.Contains(list, "in the future") {
		t.Fatalf("list must show the heartbeat in the future:\n%s", list)
	}

	r := clitest.Must(t, 4, root, "acquire", "prod", "--pid", self)
	if !strings.Contains(r.Stderr, "in the future") {
		t.Fatalf("the stale refusal must say the heartbeat is in the future: %s", r.Stderr)
	}
	if got, _ := os.ReadFile(path); string(got) != string(file) {
		t.Fatalf("a refused acquire changed the file:\n%s", got)
	}
	clitest.Must(t, 0, root, "acquire", "prod", "--pid", self, "--force")
	if st := lastBody(t, root, "lock_stolen"); st["reason"] != events.ReasonForeignLock {
		t.Fatalf("lock_stolen %v, want reason %s", st, events.ReasonForeignLock)
	}
	if v := clitest.Verify(t, 0, root); !v.OK {
		t.Fatalf("verify: %+v", v)
	}
}

func TestAHeartbeatFromTheFutureIsStaleAtAFileTarget(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tf", "job.lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	file := futureTowerFleetFile(t, "job")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	target := formats.NameTowerFleet + ":" + path

	r := clitest.Must(t, 4, root, "acquire", "job", "--file", target, "--pid", self)
	if !strings.Contains(r.Stderr, "in the future") {
		t.Fatalf("the stale refusal must say the heartbeat is in the future: %s", r.Stderr)
	}
	if got, _ := os.ReadFile(path); string(got) != string(file) {
		t.Fatalf("a refused acquire changed the file:\n%s", got)
	}
	clitest.Must(t, 0, root, "acquire", "job", "--file", target, "--pid", self, "--force")
	if st := lastBody(t, root, "lock_stolen"); st["reason"] != events.ReasonForeignLock {
		t.Fatalf("lock_stolen %v, want reason %s", st, events.ReasonForeignLock)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := formats.TowerFleet.Parse(got); err != nil || h.RequestID == "req_from_2030" {
		t.Fatalf("the target after the forced acquire: %v\n%s", err, got)
	}
	if v := clitest.Verify(t, 0, root); !v.OK {
		t.Fatalf("verify: %+v", v)
	}
}

// Another host's tower-fleet lock taken two minutes ahead of this host's
// clock (within formats.MaxClockSkew, so held): status and list, text and
// JSON, say it has been held 0s so far, never a negative time; the
// heartbeat keeps its sign (in the future).
func TestAHolderFromAClockAheadIsHeldForZero(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	initLedger(t, root)
	ahead := time.Now().Add(2 * time.Minute)
	h := formats.Holder{Lock: "prod", RequestID: "req_ahead", Actor: "ahead-host", Intent: "deploy", IntentVersion: "1",
		HostID: "elsewhere", PID: 4242, CreatedAt: ahead, HeartbeatAt: ahead, TTL: 900 * time.Second}
	b, err := formats.TowerFleet.Render(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "locks", "prod.lock"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	st := statusJSON(t, root, "prod")
	if held, _ := st["held_seconds"].(float64); st["state"] != events.StateHeld || held != 0 {
		t.Errorf("status --json: state %v, held_seconds %v; want held, 0", st["state"], st["held_seconds"])
	}
	if age, _ := st["heartbeat_age_seconds"].(float64); age >= 0 {
		t.Errorf("heartbeat_age_seconds %v, want negative (the heartbeat is in the future)", st["heartbeat_age_seconds"])
	}
	list := clitest.Must(t, 0, root, "list", "--json").Stdout
	if !strings.Contains(list, `"held_seconds":0,`) {
		t.Errorf("list --json: want held_seconds 0:\n%s", list)
	}
	if text := clitest.Must(t, 0, root, "status", "prod").Stdout; !strings.Contains(text, "held for   0s") {
		t.Errorf("status: want held for 0s:\n%s", text)
	}
}
