package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/clitest"
)

// TestSharedHolderReleasesItsSlotBesideAForeignFile: another tool's lock
// file appears at NAME.lock while shared holders hold the lock (the
// ledger blocks everyone until one side is gone). A shared holder must
// still be able to release its own slot, or its side never goes.
func TestSharedHolderReleasesItsSlotBesideAForeignFile(t *testing.T) {
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "db", "--shared", "--request-id", "r1")
	other, _ := sleeper(t)
	takeOver(t, formats.NameTowerFleet, filepath.Join(root, "locks", "db.lock"), "db", other)
	if r := clitest.Run(t, root, "release", "db", "--request-id", "r1"); r.Code != 0 {
		t.Fatalf("shared holder's own release beside a foreign file: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := clitest.Strings(t, root, "SELECT request_id FROM lock_holders WHERE lock_name = 'db'"); len(got) != 0 {
		t.Errorf("lock_holders after release: %v, want none", got)
	}
}

// TestStatusCheckOfSharedHoldersBesideADeadForeignFile: a dead holder's
// foreign file beside live shared holders: acquire (shared or exclusive)
// is blocked with exit 3, so status --check must say 3, not 0 (free).
func TestStatusCheckOfSharedHoldersBesideADeadForeignFile(t *testing.T) {
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "db", "--shared", "--request-id", "r1")
	other, kill := sleeper(t)
	takeOver(t, formats.NameTowerFleet, filepath.Join(root, "locks", "db.lock"), "db", other)
	kill()
	clitest.Must(t, 3, root, "acquire", "db", "--request-id", "x")
	clitest.Must(t, 3, root, "acquire", "db", "--shared", "--request-id", "y")
	if r := clitest.Run(t, root, "status", "db", "--check"); r.Code != 3 {
		t.Errorf("status --check: exit %d, want 3 as acquire met (live shared holder r1 beside a dead foreign file)", r.Code)
	}
}

// TestForcedReleaseOfASharedHolderIsAudited: `release --force
// --request-id X --reason TEXT` of a shared holder is an operator's
// release of someone else's slot: the event must say forced, name the
// released request and carry the reason, as it does for an exclusive one.
func TestForcedReleaseOfASharedHolderIsAudited(t *testing.T) {
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "db", "--limit", "2", "--request-id", "r1", "--actor", "worker")
	r := clitest.Must(t, 0, root, "release", "db", "--force", "--request-id", "r1", "--actor", "oncall",
		"--reason", "INC-7: runner gone", "--json")
	body := clitest.Strings(t, root, "SELECT CAST(body AS TEXT) FROM events WHERE type = 'lock_released'")
	if len(body) != 1 {
		t.Fatalf("lock_released events: %v", body)
	}
	if !strings.Contains(body[0], `"forced":true`) || !strings.Contains(body[0], "INC-7") {
		t.Errorf("forced release of a shared holder recorded as %s: want forced true and the reason", body[0])
	}
	if !strings.Contains(r.Stdout, `"forced"`) {
		t.Errorf("release --json: %s, want forced reported", r.Stdout)
	}
	if v := clitest.Run(t, root, "verify"); v.Code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
	}
}

// TestSharedTakeoverOfASupersededHolder: the ledger's exclusive holder
// dies, another tool takes its file over; a shared steal --active takes
// the lock from that file. The ledger's old exclusive row must not
// survive beside the shared holder: an exclusive acquire is then blocked,
// and verify agrees with the tables.
func TestSharedTakeoverOfASupersededHolder(t *testing.T) {
	root := t.TempDir()
	old, killOld := sleeper(t)
	clitest.Must(t, 0, root, "acquire", "db", "--request-id", "ours", "--pid", strconv.Itoa(old))
	killOld()
	other, killOther := sleeper(t)
	takeOver(t, formats.NameTowerFleet, filepath.Join(root, "locks", "db.lock"), "db", other)
	killOther()
	clitest.Must(t, 0, root, "steal", "db", "--shared", "--active", "--yes", "--reason", "test", "--request-id", "s1")
	if r := clitest.Run(t, root, "acquire", "db", "--request-id", "x"); r.Code != 3 {
		t.Errorf("exclusive acquire beside live shared holder s1: exit %d, want 3\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if st := statusJSON(t, root, "db"); st["mode"] != "shared" {
		t.Errorf("status: %v, want held shared by s1", st)
	}
	if v := clitest.Run(t, root, "verify"); v.Code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
	}
}
