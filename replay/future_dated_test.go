package replay_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/verify"
)

// An event dated a year ahead, chained as the ledger chains any event, is
// itself the one verify reports: against the verifying clock while that
// date is still to come, against the events around it once it has passed;
// never the honest event after it.
func TestVerifyFlagsAFutureDatedEventNotItsSuccessor(t *testing.T) {
	ctx := context.Background()
	const year = 365 * 24 * time.Hour
	for _, c := range []struct {
		name      string
		successor bool          // an honest event follows it
		later     time.Duration // how long after the honest clock verify runs
		spells    int           // quiet spells (a minute each) before it
	}{
		{"the last event, verified now", false, 0, 0},
		{"followed by an honest event, verified now", true, 0, 0},
		{"followed by an honest event, verified two years later", true, 2 * year, 0},
		{"after more quiet spells than verify remembers, verified two years later", true, 2 * year, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := testclock.New(base)
			l := openScripted(t, t.TempDir(), clk, nil)
			acquire := func(lock string) int64 {
				t.Helper()
				id := ledger.Identity{Actor: "alice", RequestID: "req-" + lock, PID: os.Getpid()}
				got, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id, TTL: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				return got.FencingToken
			}
			acquire("a")
			for i := range c.spells {
				clk.Add(time.Minute)
				acquire(fmt.Sprintf("s%d", i))
			}
			clk.Add(time.Minute)
			acquire("b")
			clk.Add(year)
			ahead := acquire("c")
			clk.Add(-year + time.Minute)
			if c.successor {
				acquire("d")
			}
			clk.Add(c.later)
			rep, err := l.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || rep.ProblemCount != 1 || rep.FirstBad.Kind != verify.KindFutureDated || rep.FirstBad.Seq != ahead {
				t.Fatalf("want one future_dated finding at seq %d, got %s", ahead, fmt.Sprintf("%+v", rep.Problems))
			}
		})
	}
}
