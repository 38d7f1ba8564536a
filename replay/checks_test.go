package replay_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// An export without a single line fails: an empty file proves nothing.
func TestVerifyFileFailsAnEmptyOrBlankFile(t *testing.T) {
	for _, data := range []string{"", "\n", "  \n\t\n\r\n"} {
		rep, err := replay.VerifyFile(strings.NewReader(data), "empty.jsonl", "")
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || rep.FirstBad == nil || rep.FirstBad.Kind != verify.KindEmpty || rep.ProblemCount != 1 {
			t.Errorf("%q: OK=%v first bad %+v, %d problems; want one %s", data, rep.OK, rep.FirstBad, rep.ProblemCount, verify.KindEmpty)
		}
	}
}

// verifyLog runs verify on a hand-built log and returns the finished report.
func verifyLog(t *testing.T, g *ovlLog, opts ...replay.VerifyOption) *verify.Report {
	t.Helper()
	rep, _, err := replay.VerifyLedger(context.Background(), g.db, "test", events.Genesis("overlap-test"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	rep.Finish()
	return rep
}

// wantFirstBad fails unless rep's first bad is kind at seq, and it is the
// only problem.
func wantFirstBad(t *testing.T, rep *verify.Report, seq int64, kind verify.Kind) {
	t.Helper()
	if rep.OK || rep.FirstBad == nil || rep.FirstBad.Seq != seq || rep.FirstBad.Kind != kind || rep.ProblemCount != 1 {
		t.Fatalf("first bad %+v, %d problems; want only seq %d %s\nall: %+v", rep.FirstBad, rep.ProblemCount, seq, kind, rep.Problems)
	}
}

// The ledger gives every acquisition its own seq as fencing token, and a
// release carries its holding's token: a re-chained log with any other
// token fails verify, naming the event.
func TestVerifyFindsFencingTokensTheLedgerNeverGives(t *testing.T) {
	acquired := func(token int64) *events.Acquired {
		return &events.Acquired{TTLSeconds: 60, FencingToken: token, Metadata: map[string]string{}}
	}
	cases := []struct {
		name  string
		build func(g *ovlLog) int64 // the bad seq, 0 for none
	}{
		{"tokens as the ledger gives them", func(g *ovlLog) int64 {
			a := g.acquire("x", "req_a")
			g.release("x", "req_a", a)
			g.acquire("x", "req_b")
			s := g.steal("x", "req_c", "req_b", events.ReasonStaleForced)
			g.forceRelease("x", "req_oncall", "req_c", s)
			return 0
		}},
		{"acquired with an older token", func(g *ovlLog) int64 {
			a := g.acquire("x", "req_a")
			g.release("x", "req_a", a)
			return g.add(events.LockAcquired, "x", "req_b", acquired(a))
		}},
		{"acquired with a token ahead of its seq", func(g *ovlLog) int64 {
			return g.add(events.LockAcquired, "x", "req_a", acquired(g.seq+5))
		}},
		{"stolen with another token", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			prev := events.Record{LockVersion: "v1", LockName: "x", RequestID: "req_a", Actor: "tester", HostID: "host-a", PID: 42,
				CreatedAt: "2026-01-02T03:04:05Z", LastHeartbeatAt: "2026-01-02T03:04:05Z", TTLSeconds: 60, Metadata: map[string]string{}}
			return g.add(events.LockStolen, "x", "req_b", &events.Stolen{Acquired: *acquired(1), PreviousLock: prev,
				PreviousLockHash: events.LockFileHash(prev.File()), Reason: events.ReasonStaleForced})
		}},
		{"released with another holding's token", func(g *ovlLog) int64 {
			a := g.acquire("x", "req_a")
			g.release("x", "req_a", a)
			g.acquire("x", "req_b")
			return g.release("x", "req_b", a)
		}},
		{"forced release without a token", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			return g.forceRelease("x", "req_oncall", "req_a", 0)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newOvlLog(t)
			bad := c.build(g)
			rep := verifyLog(t, g)
			if bad == 0 {
				if !rep.OK {
					t.Fatalf("a genuine log fails: %+v", rep.Problems)
				}
				return
			}
			wantFirstBad(t, rep, bad, verify.KindFencingToken)
		})
	}
}

// The ledger makes event_id (a ULID) and at from one reading of the clock:
// an event whose at was rewritten without its event_id, or the other way
// round, and then re-chained, fails verify.
func TestVerifyFindsAnEventIDWhoseTimeIsNotAt(t *testing.T) {
	cases := []struct {
		name  string
		forge func(e *events.Envelope)
		bad   bool
	}{
		{"event_id made from at, as the ledger does", nil, false},
		{"at with a fraction of a millisecond", func(e *events.Envelope) {
			at := time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC)
			e.EventID, e.At = events.NewULID(at), events.FormatTime(at)
		}, false},
		{"at backdated by a second", func(e *events.Envelope) {
			at, _ := events.ParseTime(e.At)
			e.At = events.FormatTime(at.Add(-time.Second))
		}, true},
		{"event_id from a clock two milliseconds ahead", func(e *events.Envelope) {
			at, _ := events.ParseTime(e.At)
			e.EventID = events.NewULID(at.Add(2 * time.Millisecond))
		}, true},
		{"event_id whose time does not fit in a ULID", func(e *events.Envelope) {
			e.EventID = "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newOvlLog(t)
			g.acquire("x", "req_a")
			g.forge = c.forge
			bad := g.heartbeat("x", "req_a")
			g.heartbeat("x", "req_a")
			rep := verifyLog(t, g)
			if !c.bad {
				if !rep.OK {
					t.Fatalf("a genuine log fails: %+v", rep.Problems)
				}
				return
			}
			wantFirstBad(t, rep, bad, verify.KindEventIDTime)
		})
	}
}

// back moves the hand-built log's clock so that its next event is d
// earlier than its last.
func (g *ovlLog) back(d time.Duration) { g.at = g.at.Add(-d - time.Second) }

// The ledger stamps events in the order it appends them: an event more
// than the clock tolerance earlier than one before it (a backdated event in
// a re-chained log) fails verify, once per step back; smaller steps, as a
// clock corrected by NTP makes, do not. Steps are measured from the latest
// time already recorded, so that small steps cannot add up unseen.
func TestVerifyFindsTimeGoingBackwards(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *ovlLog) int64 // the bad seq, 0 for none
		opts  []replay.VerifyOption
	}{
		{"time going forward", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			g.heartbeat("x", "req_a")
			return 0
		}, nil},
		{"a clock stepped back within the tolerance", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			g.back(1500 * time.Millisecond)
			g.heartbeat("x", "req_a")
			g.heartbeat("x", "req_a") // still behind seq 1, by 0.5s
			g.heartbeat("x", "req_a")
			g.back(replay.DefaultClockSkew)
			g.heartbeat("x", "req_a") // exactly the tolerance behind seq 4
			return 0
		}, nil},
		{"small steps back adding up to more than the tolerance", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			g.back(1500 * time.Millisecond)
			g.heartbeat("x", "req_a")
			g.back(time.Second)
			return g.heartbeat("x", "req_a") // 2.5s behind seq 1
		}, nil},
		{"a backdated release", func(g *ovlLog) int64 {
			a := g.acquire("x", "req_a")
			g.heartbeat("x", "req_a")
			g.back(time.Hour)
			bad := g.release("x", "req_a", a)
			g.acquire("x", "req_b") // still an hour behind seq 2: the same step, no second finding
			return bad
		}, nil},
		{"a step back just over the tolerance", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			g.back(replay.DefaultClockSkew + time.Millisecond)
			return g.heartbeat("x", "req_a")
		}, nil},
		{"a step back within a wider tolerance", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			g.back(time.Minute)
			g.heartbeat("x", "req_a")
			return 0
		}, []replay.VerifyOption{replay.ClockSkew(time.Minute)}},
		{"two steps back, each over the tolerance", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			g.back(time.Hour)
			bad := g.heartbeat("x", "req_a")
			g.back(time.Hour)
			g.heartbeat("x", "req_a")
			return bad
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newOvlLog(t)
			bad := c.build(g)
			rep := verifyLog(t, g, c.opts...)
			if bad == 0 {
				if !rep.OK {
					t.Fatalf("a genuine log fails: %+v", rep.Problems)
				}
				return
			}
			if c.name == "two steps back, each over the tolerance" {
				if rep.ProblemCount != 2 || rep.Problems[1].Kind != verify.KindTimeBackwards || rep.Problems[1].Seq != bad+1 {
					t.Fatalf("want one finding per step, at seqs %d and %d: %+v", bad, bad+1, rep.Problems)
				}
				rep.Problems, rep.ProblemCount = rep.Problems[:1], 1
			}
			wantFirstBad(t, rep, bad, verify.KindTimeBackwards)
		})
	}
}

// No event is older than the ledger (meta's created_at), within the clock
// tolerance: a log re-chained with backdated events fails verify, once per
// run of such events.
func TestVerifyFindsEventsOlderThanTheLedger(t *testing.T) {
	cases := []struct {
		name    string
		created time.Duration // created_at relative to the first event's at
		ok      bool
	}{
		{"created before its first event", -time.Minute, true},
		{"created a second after its first event (a clock step)", time.Second, true},
		{"created an hour after its first event", time.Hour, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newOvlLog(t)
			first := g.at.Add(time.Second)
			if _, err := g.db.Exec(`INSERT INTO meta (key, value) VALUES ('created_at', ?)`,
				events.FormatTime(first.Add(c.created))); err != nil {
				t.Fatal(err)
			}
			a := g.acquire("x", "req_a")
			g.heartbeat("x", "req_a")
			g.release("x", "req_a", a)
			rep := verifyLog(t, g)
			if len(rep.Notes) != 0 {
				t.Fatalf("notes: %q", rep.Notes)
			}
			if c.ok {
				if !rep.OK {
					t.Fatalf("a genuine log fails: %+v", rep.Problems)
				}
				return
			}
			wantFirstBad(t, rep, 1, verify.KindBeforeCreation)
		})
	}
	// A ledger without created_at is not checked against it, and says so.
	g := newOvlLog(t)
	g.acquire("x", "req_a")
	if rep := verifyLog(t, g); !rep.OK || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "created_at") {
		t.Fatalf("no created_at: OK=%v notes %q", rep.OK, rep.Notes)
	}
}

// A real ledger whose clock is stepped back between writes, as NTP or a
// hand does: steps within the tolerance verify, a larger one is reported
// until the tolerance is widened to cover it.
func TestVerifyOfALedgerWhoseClockSteps(t *testing.T) {
	ctx := context.Background()
	c := testclock.New(base)
	l := openScripted(t, t.TempDir(), c, nil)
	id := ledger.Identity{Actor: "alice", RequestID: "req-a", PID: os.Getpid()}
	check := func(opts ...ledger.VerifyOption) *verify.Report {
		t.Helper()
		rep, err := l.Verify(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	c.Add(-time.Second) // a step back right after the ledger was created
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "deploy", Identity: id, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c.Add(3 * time.Second)
	if _, err := l.Heartbeat(ctx, "deploy", id); err != nil {
		t.Fatal(err)
	}
	c.Add(-1500 * time.Millisecond)
	if _, err := l.Heartbeat(ctx, "deploy", id); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Minute)
	if _, err := l.Heartbeat(ctx, "deploy", id); err != nil {
		t.Fatal(err)
	}
	if rep := check(); !rep.OK || len(rep.Notes) != 0 {
		t.Fatalf("steps within the tolerance: %+v %q", rep.Problems, rep.Notes)
	}
	c.Add(-10 * time.Second)
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "deploy", Identity: id}); err != nil {
		t.Fatal(err)
	}
	rep := check()
	if rep.OK || rep.FirstBad.Kind != verify.KindTimeBackwards || rep.FirstBad.Seq != 5 || rep.ProblemCount != 1 {
		t.Fatalf("a step back of 10s: %+v", rep.Problems)
	}
	if rep := check(ledger.AllowClockSkew(10 * time.Second)); !rep.OK {
		t.Fatalf("a step back of 10s with --clock-skew 10s: %+v", rep.Problems)
	}
}

// exportOf is the JSON Lines export of a hand-built log, from seq from on.
func exportOf(t *testing.T, g *ovlLog, from int64) string {
	t.Helper()
	var b strings.Builder
	if err := replay.ScanRows(context.Background(), g.db, replay.Filter{FromSeq: from}, func(r *replay.Row) error {
		return replay.WriteExportLine(&b, r)
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// An export from seq 1 holds the whole log: verify --file replays it as
// verify replays the ledger, and finds a second holder, an event the
// ledger could not have written and a release's wrong token in a
// re-chained export. A slice from a later seq starts from a state it does
// not know, and is not replayed.
func TestVerifyFileReplaysAnExportFromSeqOne(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *ovlLog) int64
		kind  verify.Kind
	}{
		{"two holders at once", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			g.heartbeat("x", "req_a")
			return g.acquire("x", "req_b")
		}, verify.KindOverlap},
		{"a heartbeat from a request that does not hold the lock", func(g *ovlLog) int64 {
			g.acquire("x", "req_a")
			g.heartbeat("x", "req_a")
			return g.heartbeat("x", "req_b")
		}, verify.KindInconsistent},
		{"a release with another holding's token", func(g *ovlLog) int64 {
			a := g.acquire("x", "req_a")
			g.release("x", "req_a", a)
			g.acquire("x", "req_b")
			return g.release("x", "req_b", a)
		}, verify.KindFencingToken},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newOvlLog(t)
			bad := c.build(g)
			for _, anchor := range []string{"", events.Genesis("overlap-test")} {
				rep, err := replay.VerifyFile(strings.NewReader(exportOf(t, g, 1)), "export", anchor)
				if err != nil {
					t.Fatal(err)
				}
				if !rep.Replayed {
					t.Errorf("anchor %q: an export from seq 1 was not replayed", anchor)
				}
				wantFirstBad(t, rep, bad, c.kind)
			}
			// The same events from seq 2: no state to replay from.
			rep, err := replay.VerifyFile(strings.NewReader(exportOf(t, g, 2)), "slice", "")
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK || rep.Replayed {
				t.Fatalf("slice from seq 2: OK=%v replayed=%v %+v", rep.OK, rep.Replayed, rep.Problems)
			}
		})
	}
	// A genuine export from seq 1 is replayed and OK.
	g := newOvlLog(t)
	a := g.acquire("x", "req_a")
	g.release("x", "req_a", a)
	g.acquire("x", "req_b")
	rep, err := replay.VerifyFile(strings.NewReader(exportOf(t, g, 1)), "export", events.Genesis("overlap-test"))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || !rep.Replayed || rep.Locks != 1 {
		t.Fatalf("genuine export: OK=%v replayed=%v locks=%d %+v", rep.OK, rep.Replayed, rep.Locks, rep.Problems)
	}
}
