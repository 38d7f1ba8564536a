package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/replay"
)

// holdInterval is what one child of `run` saw of its own tenure: its clock
// at its first and last instruction, and the fencing token it was given.
type holdInterval struct {
	rid        string
	token      int64
	start, end int64 // ns since the epoch, from date +%s%N
}

// parseIntervals reads lines "start NS RID TOKEN" / "end NS RID TOKEN".
func parseIntervals(data []byte) ([]holdInterval, error) {
	byRID := map[string]*holdInterval{}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || (f[0] != "start" && f[0] != "end") {
			return nil, fmt.Errorf("bad interval line %q", line)
		}
		ns, err1 := strconv.ParseInt(f[1], 10, 64)
		tok, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad interval line %q", line)
		}
		iv := byRID[f[2]]
		if iv == nil {
			iv = &holdInterval{rid: f[2], token: tok}
			byRID[f[2]] = iv
			order = append(order, f[2])
		}
		if f[0] == "start" {
			iv.start = ns
		} else {
			iv.end = ns
		}
	}
	var out []holdInterval
	for _, rid := range order {
		iv := byRID[rid]
		if iv.start == 0 || iv.end == 0 || iv.end < iv.start {
			return nil, fmt.Errorf("request %s: incomplete interval %+v", rid, *iv)
		}
		out = append(out, *iv)
	}
	return out, nil
}

// tenureScript is the child a contention test runs under `run`: it logs
// its start and end (lines parseIntervals reads) to $LOG, with a sleep of
// the given length between them.
func tenureScript(sleep string) string {
	return `echo "start $(date +%s%N) $LOCKLEDGER_REQUEST_ID $LOCKLEDGER_FENCING_TOKEN" >> "$LOG"
sleep ` + sleep + `
echo "end $(date +%s%N) $LOCKLEDGER_REQUEST_ID $LOCKLEDGER_FENCING_TOKEN" >> "$LOG"`
}

// readTenures reads the tenure log at path and fails unless it holds
// exactly want complete tenures.
func readTenures(t *testing.T, path string, want int) []holdInterval {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ivs, err := parseIntervals(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) != want {
		t.Fatalf("%d tenures logged, want %d", len(ivs), want)
	}
	return ivs
}

// assertNoOverlaps fails for every instant replay of db shows two holders.
func assertNoOverlaps(t *testing.T, db *sql.DB) {
	t.Helper()
	overlaps, err := replay.Overlaps(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range overlaps {
		t.Errorf("two holders: %s", o)
	}
}

// intervalProblems sorts the tenures by start and reports every pair that
// overlaps, and every fencing token that does not increase with the order
// in which the holders actually ran.
func intervalProblems(ivs []holdInterval) []string {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
	var out []string
	for i := 1; i < len(ivs); i++ {
		prev, cur := ivs[i-1], ivs[i]
		if cur.start <= prev.end {
			out = append(out, fmt.Sprintf("%s ran from %d while %s ran until %d (%s of overlap)", cur.rid, cur.start,
				prev.rid, prev.end, time.Duration(prev.end-cur.start)))
		}
		if cur.token <= prev.token {
			out = append(out, fmt.Sprintf("%s ran after %s with fencing token %d <= %d", cur.rid, prev.rid, cur.token, prev.token))
		}
	}
	return out
}

// TestContentionIntervalCheckerCatchesOverlap shows that the interval
// check below can fail.
func TestContentionIntervalCheckerCatchesOverlap(t *testing.T) {
	t.Parallel()
	ok := []holdInterval{{"a", 1, 10, 20}, {"c", 3, 40, 50}, {"b", 2, 21, 30}}
	if p := intervalProblems(ok); len(p) != 0 {
		t.Fatalf("disjoint tenures reported: %v", p)
	}
	bad := []holdInterval{{"a", 1, 10, 20}, {"b", 2, 15, 30}, {"c", 2, 31, 40}}
	if p := intervalProblems(bad); len(p) != 2 {
		t.Fatalf("want one overlap and one non-increasing token, got %v", p)
	}
	if _, err := parseIntervals([]byte("start 1 a 1\n")); err == nil {
		t.Fatal("a tenure without an end was accepted")
	}
}

// TestContentionManyRunWaitersOnOneLock starts 16 `run --wait` processes
// at once on one lock (48, in several rounds, under LOCKLEDGER_STRESS=1). Every one
// must get the lock and exit 0; the children's own start/end clocks never
// overlap and their fencing tokens increase in the order they ran; replay
// of the ledger shows no instant with two holders; every acquisition has
// its release and the chain verifies.
func TestContentionManyRunWaitersOnOneLock(t *testing.T) {
	// In the parallel phase, beside TestFaultBusyLedgerFailsCleanly, which
	// mostly waits out busy timeouts while this one keeps the CPUs busy.
	t.Parallel()
	procs, rounds := 16, 1
	if stressed() {
		procs, rounds = 48, 6
	}
	root := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "tenures")
	child := tenureScript("0.02")
	start := time.Now()
	var releaseFailures []string
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		errs := make([]string, procs)
		stderrs := make([]string, procs)
		for i := 0; i < procs; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
				defer cancel()
				c := clitest.Command(ctx, root, "run", "contended", "--wait", "180s", "--ttl", "30",
					"--actor", fmt.Sprintf("waiter-%d-%d", round, i), "--", "sh", "-c", child)
				c.Env = append(c.Env, "LOG="+logFile)
				var errb bytes.Buffer
				c.Stderr = &errb
				if err := c.Run(); err != nil {
					errs[i] = fmt.Sprintf("waiter %d: %v\n%s", i, err, errb.String())
				}
				stderrs[i] = errb.String()
			}()
		}
		wg.Wait()
		for i, e := range stderrs {
			for _, l := range strings.Split(e, "\n") {
				if strings.Contains(l, "release failed") {
					releaseFailures = append(releaseFailures, fmt.Sprintf("round %d waiter %d: %s", round, i, l))
				}
			}
		}
		for _, e := range errs {
			if e != "" {
				t.Error(e)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	took := time.Since(start)
	for _, p := range intervalProblems(readTenures(t, logFile, procs*rounds)) {
		t.Error(p)
	}
	assertNoOverlaps(t, clitest.DB(t, root))
	counts := map[string]int{}
	for _, ty := range clitest.Types(t, root) {
		counts[ty]++
	}
	n := procs * rounds
	assertChain(t, root)
	if r := clitest.Run(t, root, "verify"); r.Code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("%d contended runs (%d at a time, %d rounds) in %s, no overlap; events %v", n, procs, rounds,
		took.Round(time.Millisecond), counts)
	// A waiter joins the lock's queue with one acquire_blocked (until) and
	// renews its place with one more (queued_seq) at most every sixth of
	// events.WaiterTTL it waits; none may give up.
	var gaveUp, joins, renewals int
	if err := clitest.DB(t, root).QueryRow(`SELECT
		count(*) FILTER (WHERE json_extract(body, '$.until') IS NULL),
		count(*) FILTER (WHERE json_extract(body, '$.until') IS NOT NULL AND json_extract(body, '$.queued_seq') IS NULL),
		count(*) FILTER (WHERE json_extract(body, '$.queued_seq') IS NOT NULL)
		FROM events WHERE type = 'acquire_blocked'`).Scan(&gaveUp, &joins, &renewals); err != nil {
		t.Fatal(err)
	}
	maxRenewals := n * int(took/(events.WaiterTTL/6)+1)
	t.Logf("queue records: %d joins, %d renewals (at most %d in %s)", joins, renewals, maxRenewals, took.Round(time.Millisecond))
	if counts["lock_acquired"] != n || counts["lock_released"] != n || counts["lock_stolen"] != 0 || gaveUp != 0 || joins > n-rounds || renewals > maxRenewals {
		t.Errorf("events %v (%d blocked gave up, %d joined the queue, %d renewed a place), want %d lock_acquired and %d lock_released, no steals, at most one join per waiter, at most %d renewals and none that gave up",
			counts, gaveUp, joins, renewals, n, n, maxRenewals)
	}
	for _, f := range releaseFailures {
		t.Errorf("a release failed although every lock was released: %s", f)
	}
}
