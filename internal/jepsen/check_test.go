package jepsen_test

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockledger/lockledger/internal/jepsen"
)

const ms = int64(time.Millisecond)

// record builds an outside record: for each job, client, token and its
// [start, last] in ms, with ticks between.
func record(t *testing.T, jobs ...[4]int64) []jepsen.Line {
	t.Helper()
	var b strings.Builder
	for i, j := range jobs {
		rid := "r" + string(rune('a'+i))
		l := jepsen.Line{Client: int(j[0]), Request: rid, Token: j[1], PID: 100 + i, Lock: "l"}
		for at, kind := j[2], "start"; at <= j[3]; at, kind = at+10, "tick" {
			l.Mono, l.Kind = at*ms, kind
			b.WriteString(l.String())
		}
	}
	lines, err := jepsen.ReadRecord(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func runsFor(jobs []jepsen.Job, launch, exit int64) []jepsen.Run {
	var runs []jepsen.Run
	for _, j := range jobs {
		runs = append(runs, jepsen.Run{Client: j.Client, Request: j.Request, Launch: j.Start - launch*ms, Exit: j.Last + exit*ms})
	}
	return runs
}

func holdings(jobs []jepsen.Job) []jepsen.Holding {
	var hs []jepsen.Holding
	for i, j := range jobs {
		hs = append(hs, jepsen.Holding{Seq: int64(i + 1), Type: "lock_acquired", Request: j.Request, Token: j.Token, At: j.Start})
	}
	return hs
}

func TestCheckersPassOneHolderAtATime(t *testing.T) {
	jobs := jepsen.Jobs(record(t, [4]int64{0, 1, 100, 200}, [4]int64{1, 3, 210, 300}, [4]int64{2, 7, 305, 400}), "l")
	if len(jobs) != 3 || jobs[1].Start != 210*ms || jobs[1].Last != 300*ms {
		t.Fatalf("jobs: %+v", jobs)
	}
	if o := jepsen.Exclusion(jobs); len(o) != 0 {
		t.Errorf("exclusion: %v", o)
	}
	if n := jepsen.FencingViolations(jobs); n != 0 {
		t.Errorf("fencing violations: %d", n)
	}
	if n := jepsen.Disagreements(jobs, holdings(jobs)); n != 0 {
		t.Errorf("disagreements: %d", n)
	}
	// Acquires that waited through the previous job, releases that return late.
	lock, token := jepsen.Linearizable(jobs, runsFor(jobs, 150, 20), time.Second)
	if lock != porcupine.Ok || token != porcupine.Ok {
		t.Errorf("porcupine: lock %s, token %s", lock, token)
	}
}

func TestCheckersFailOnOverlap(t *testing.T) {
	// b starts while a still writes: a paused run's job after a take-over.
	jobs := jepsen.Jobs(record(t, [4]int64{0, 1, 100, 300}, [4]int64{1, 2, 250, 400}), "l")
	o := jepsen.Exclusion(jobs)
	if len(o) != 1 || o[0].First != "ra" || o[0].Second != "rb" || o[0].By != 50*time.Millisecond {
		t.Errorf("exclusion: %v, want ra and rb overlapping by 50ms", o)
	}
	lock, token := jepsen.Linearizable(jobs, runsFor(jobs, 10, 10), time.Second)
	if lock != porcupine.Illegal {
		t.Errorf("lock model: %s, want Illegal", lock)
	}
	if token != porcupine.Ok {
		t.Errorf("token model: %s, want Ok (the tokens do go up)", token)
	}
	// Nor does a release that was never seen (the run killed) excuse it.
	runs := runsFor(jobs, 10, 10)
	runs[0].Code = -1
	if lock, _ := jepsen.Linearizable(jobs, runs, time.Second); lock != porcupine.Illegal {
		t.Errorf("lock model, killed run: %s, want Illegal", lock)
	}
	// A job contained in another overlaps by its whole length.
	inner := jepsen.Jobs(record(t, [4]int64{0, 1, 100, 500}, [4]int64{1, 2, 200, 300}), "l")
	if o := jepsen.Exclusion(inner); len(o) != 1 || o[0].By != 100*time.Millisecond {
		t.Errorf("exclusion, nested: %v", o)
	}
}

func TestCheckersFailOnTokensOutOfOrder(t *testing.T) {
	jobs := jepsen.Jobs(record(t, [4]int64{0, 5, 100, 200}, [4]int64{1, 4, 300, 400}, [4]int64{2, 4, 500, 600}), "l")
	if n := jepsen.FencingViolations(jobs); n != 2 {
		t.Errorf("fencing violations: %d, want 2 (a lower token, then a repeated one)", n)
	}
	if _, token := jepsen.Linearizable(jobs, runsFor(jobs, 10, 10), time.Second); token != porcupine.Illegal {
		t.Errorf("token model: %s, want Illegal", token)
	}
	// Acquires that overlap in time may take their tokens in either order.
	concurrent := runsFor(jobs[:2], 10, 10)
	concurrent[1].Launch = 50 * ms
	if _, token := jepsen.Linearizable(jobs[:2], concurrent, time.Second); token != porcupine.Ok {
		t.Errorf("token model, concurrent acquires: %s, want Ok", token)
	}
}

func TestCheckersFailOnHistoryDisagreement(t *testing.T) {
	jobs := jepsen.Jobs(record(t, [4]int64{0, 1, 100, 200}, [4]int64{1, 3, 300, 400}), "l")
	hs := holdings(jobs)
	hs[1].Token = 2
	if n := jepsen.Disagreements(jobs, hs); n != 1 {
		t.Errorf("a token the ledger does not have: %d disagreements, want 1", n)
	}
	hs = holdings(jobs)
	hs[0].Seq, hs[1].Seq = hs[1].Seq, hs[0].Seq
	if n := jepsen.Disagreements(jobs, hs); n != 1 {
		t.Errorf("holdings in another order: %d disagreements, want 1", n)
	}
	if n := jepsen.Disagreements(jobs, holdings(jobs)[:1]); n != 1 {
		t.Errorf("a job with no holding: %d disagreements, want 1", n)
	}
}

func TestLossToStop(t *testing.T) {
	jobs := jepsen.Jobs(record(t, [4]int64{0, 1, 100, 300}, [4]int64{1, 2, 350, 400}), "l")
	got := jepsen.LossToStop(jobs, map[string]int64{"ra": 250 * ms, "rb": 500 * ms})
	if len(got) != 2 || got[0] != 50*time.Millisecond || got[1] != 0 {
		t.Errorf("loss-to-stop: %v, want [50ms 0s]", got)
	}
	if q := jepsen.Quantile([]time.Duration{3, 1, 2}, 0.5); q != 2 {
		t.Errorf("median: %v", q)
	}
}

func TestCheckersFailOnAStaleFencedWrite(t *testing.T) {
	ok := []jepsen.FencedWrite{{Token: 3, Request: "ra"}, {Token: 3, Request: "ra"}, {Token: 5, Request: "rb"}, {Token: 5, Request: "rb"}}
	if n := jepsen.StaleAccepted(ok); n != 0 {
		t.Errorf("tokens that never go down (equal passes): %d stale, want 0", n)
	}
	// ra wrote again after rb's higher token: the fence let a stale write through.
	bad := append(ok[:3:3], jepsen.FencedWrite{Token: 3, Request: "ra"}, jepsen.FencedWrite{Token: 5, Request: "rb"})
	if n := jepsen.StaleAccepted(bad); n != 1 {
		t.Errorf("a lower token after a higher one: %d stale, want 1", n)
	}
}

func TestCheckersFailOnARejectionMissingFromTheLedger(t *testing.T) {
	lines := record(t, [4]int64{0, 3, 100, 200}, [4]int64{1, 5, 150, 300})
	// ra's write at 210 was refused: rb had written with 5.
	lines = append(lines, jepsen.Line{Mono: 210 * ms, Kind: "rejected", Client: 0, Request: "ra", Token: 3, PID: 100, Lock: "l"})
	if n := jepsen.Rejected(lines); n != 1 {
		t.Fatalf("rejected: %d, want 1", n)
	}
	recorded := []jepsen.Rejection{{Request: "ra", Token: 3}}
	if n := jepsen.MissingRejections(lines, recorded); n != 0 {
		t.Errorf("every refusal recorded: %d missing, want 0", n)
	}
	if n := jepsen.MissingRejections(lines, nil); n != 1 {
		t.Errorf("no fence_rejected: %d missing, want 1", n)
	}
	if n := jepsen.MissingRejections(lines, []jepsen.Rejection{{Request: "ra", Token: 4}}); n != 1 {
		t.Errorf("a fence_rejected of another token: %d missing, want 1", n)
	}
	if n := jepsen.MissingRejections(lines, []jepsen.Rejection{{Request: "rb", Token: 3}}); n != 1 {
		t.Errorf("a fence_rejected of another request: %d missing, want 1", n)
	}
	// One event accounts for one refusal.
	twice := append(lines, jepsen.Line{Mono: 220 * ms, Kind: "rejected", Client: 0, Request: "ra", Token: 3, PID: 100, Lock: "l"})
	if n := jepsen.MissingRejections(twice, recorded); n != 1 {
		t.Errorf("two refusals, one event: %d missing, want 1", n)
	}
}
