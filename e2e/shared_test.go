package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/replay"
)

// TestSharedLocksLikeFlockS: two shared holders at once, an exclusive
// acquirer blocked by them (exit 3), a mismatched --limit refused (exit 2),
// --file refused with --shared (exit 2); once they are released the
// exclusive holder gets the lock and a shared acquirer is blocked in turn.
func TestSharedLocksLikeFlockS(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "db", "--shared", "--request-id", "r1")
	clitest.Must(t, 0, root, "acquire", "db", "--shared", "--request-id", "r2")
	if r := clitest.Must(t, 3, root, "acquire", "db", "--request-id", "w"); !strings.Contains(r.Stderr, "held shared by 2") {
		t.Errorf("exclusive acquire under two readers: stderr %q, want it to say so", r.Stderr)
	}
	if r := clitest.Must(t, 2, root, "acquire", "db", "--limit", "2"); !strings.Contains(r.Stderr, "--limit") ||
		!strings.Contains(r.Stderr, "current limit none") {
		t.Errorf("mismatched limit: stderr %q, want --limit and the current limit named", r.Stderr)
	}
	if r := clitest.Must(t, 2, root, "acquire", "other", "--shared", "--file", "tower-fleet:"+filepath.Join(t.TempDir(), "x.lock")); !strings.Contains(r.Stderr, "--file") {
		t.Errorf("--file with --shared: stderr %q, want --file named", r.Stderr)
	}
	var st struct {
		State   string `json:"state"`
		Mode    string `json:"mode"`
		Holders []struct {
			State string `json:"state"`
		} `json:"holders"`
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "status", "db", "--json").Stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.State != "held" || st.Mode != "shared" || len(st.Holders) != 2 {
		t.Errorf("status --json: %+v, want held shared by 2", st)
	}
	if _, err := os.Stat(filepath.Join(root, "locks", "db.lock")); !os.IsNotExist(err) {
		t.Errorf("shared holders project no lock file, but db.lock: %v", err)
	}
	who := clitest.Must(t, 0, root, "who", "db").Stdout
	if !strings.Contains(who, "held r1") || !strings.Contains(who, "held r2") {
		t.Errorf("who: %s, want both shared holders", who)
	}
	clitest.Must(t, 0, root, "release", "db", "--request-id", "r1")
	clitest.Must(t, 3, root, "acquire", "db", "--request-id", "w")
	clitest.Must(t, 0, root, "release", "db", "--request-id", "r2")
	clitest.Must(t, 0, root, "acquire", "db", "--request-id", "w")
	clitest.Must(t, 3, root, "acquire", "db", "--shared", "--request-id", "r3")
	clitest.Must(t, 3, root, "run", "db", "--shared", "--", "true")
	clitest.Must(t, 0, root, "release", "db", "--request-id", "w")
	clitest.Must(t, 0, root, "run", "db", "--shared", "--", "true")
	overlaps, err := replay.Overlaps(context.Background(), clitest.DB(t, root))
	if err != nil || len(overlaps) != 0 {
		t.Fatalf("overlaps %v (%v), want none", overlaps, err)
	}
	if r := clitest.Run(t, root, "verify"); r.Code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// maxConcurrent is the largest number of tenures that overlap at one
// instant (a tenure's start at the very instant another ends counts as
// overlapping).
func maxConcurrent(ivs []holdInterval) int {
	type edge struct {
		at    int64
		delta int
	}
	var es []edge
	for _, iv := range ivs {
		es = append(es, edge{iv.start, +1}, edge{iv.end, -1})
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].at != es[j].at {
			return es[i].at < es[j].at
		}
		return es[i].delta > es[j].delta // starts first: the conservative count
	})
	n, top := 0, 0
	for _, e := range es {
		n += e.delta
		top = max(top, n)
	}
	return top
}

func TestSemaphoreCounterCountsOverlap(t *testing.T) {
	t.Parallel()
	ivs := []holdInterval{{"a", 1, 10, 20}, {"b", 2, 15, 30}, {"c", 3, 20, 40}, {"d", 4, 41, 50}}
	if got := maxConcurrent(ivs); got != 3 {
		t.Fatalf("max concurrent: got %d, want 3", got)
	}
}

// TestSemaphoreOfThreeWithEightRacingRuns: 8 `run --limit 3 --wait`
// processes at once: all get a slot and exit 0, their children's own
// clocks never show more than 3 running at once, replay finds no overlap
// and the ledger verifies.
func TestSemaphoreOfThreeWithEightRacingRuns(t *testing.T) {
	t.Parallel()
	const procs, limit = 8, 3
	root := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "tenures")
	child := tenureScript("0.1")
	var wg sync.WaitGroup
	errs := make([]string, procs)
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := clitest.Command(ctx, root, "run", "pool", "--limit", fmt.Sprint(limit), "--wait", "90s", "--ttl", "30",
				"--actor", fmt.Sprintf("worker-%d", i), "--", "sh", "-c", child)
			c.Env = append(c.Env, "LOG="+logFile)
			var errb bytes.Buffer
			c.Stderr = &errb
			if err := c.Run(); err != nil {
				errs[i] = fmt.Sprintf("worker %d: %v\n%s", i, err, errb.String())
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	ivs := readTenures(t, logFile, procs)
	n := maxConcurrent(ivs)
	if n > limit {
		t.Errorf("%d children ran at once, the limit is %d", n, limit)
	}
	t.Logf("%d runs of a semaphore of %d: at most %d at once", procs, limit, n)
	assertNoOverlaps(t, clitest.DB(t, root))
	counts := map[string]int{}
	for _, ty := range clitest.Types(t, root) {
		counts[ty]++
	}
	if counts["lock_acquired"] != procs || counts["lock_released"] != procs || counts["lock_stolen"] != 0 {
		t.Errorf("events %v, want %d lock_acquired and lock_released, no steals", counts, procs)
	}
	assertChain(t, root)
	if r := clitest.Run(t, root, "verify"); r.Code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestSharedHolderReleasesItsSlotBesideAForeignFile: another tool's lock
// file appears at NAME.lock while shared holders hold the lock (the
// ledger blocks everyone until one side is gone). A shared holder must
// still be able to release its own slot, or its side never goes.
func TestSharedHolderReleasesItsSlotBesideAForeignFile(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "db", "--limit", "2", "--request-id", "r1", "--actor", "worker")
	r := clitest.Must(t, 0, root, "release", "db", "--force", "--yes", "--request-id", "r1", "--actor", "oncall",
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

// TestSharedTakeoverOfADisplacedHolder: the ledger's exclusive holder
// dies, another tool takes its file over; a shared steal --active takes
// the lock from that file. The ledger's old exclusive row must not
// survive beside the shared holder: an exclusive acquire is then blocked,
// and verify agrees with the tables.
func TestSharedTakeoverOfADisplacedHolder(t *testing.T) {
	t.Parallel()
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
