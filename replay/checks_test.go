package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// An export without a single line fails: an empty file proves nothing.
func TestVerifyFileFailsAnEmptyOrBlankFile(t *testing.T) {
	for _, data := range []string{"", "\n", "  \n\t\n\r\n"} {
		rep, err := replay.VerifyFile(strings.NewReader(data), "empty.jsonl", "")
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || rep.FirstBad == nil || rep.FirstBad.Kind != replay.KindEmpty || rep.ProblemCount != 1 {
			t.Errorf("%q: OK=%v first bad %+v, %d problems; want one %s", data, rep.OK, rep.FirstBad, rep.ProblemCount, replay.KindEmpty)
		}
	}
}

// verifyLog runs verify on a hand-built log and returns the finished report.
func verifyLog(t *testing.T, g *ovlLog) *replay.Report {
	t.Helper()
	rep, _, err := replay.VerifyLedger(context.Background(), g.db, "test", events.Genesis("overlap-test"))
	if err != nil {
		t.Fatal(err)
	}
	rep.Finish()
	return rep
}

// wantFirstBad fails unless rep's first bad is kind at seq, and it is the
// only problem.
func wantFirstBad(t *testing.T, rep *replay.Report, seq int64, kind replay.Kind) {
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
				PreviousLockHash: prev.Hash(), Reason: events.ReasonStaleForced})
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
			wantFirstBad(t, rep, bad, replay.KindFencingToken)
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
			wantFirstBad(t, rep, bad, replay.KindEventIDTime)
		})
	}
}
