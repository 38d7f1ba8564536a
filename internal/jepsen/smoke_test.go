package jepsen_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/jepsen"
)

// Very short real runs, so that the harness cannot rot: three clients on
// SQLite, every check passing (a kill leaves no job running on; the pause
// classes are make jepsen's). Two kill-run trials run at once, on one
// store, each on its own lock with its own clients; one kill-acquire trial
// aims its kill with its probe run, beside them. The kill-run jobs write
// through the file fence.
func TestSmokeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fault            jepsen.Fault
		trials, parallel int
		fence            bool
	}{{jepsen.FaultKillRun, 2, 2, true}, {jepsen.FaultKillAcquire, 1, 1, false}} {
		t.Run(string(c.fault), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := jepsen.RunClass(ctx, jepsen.Config{Bin: clitest.Bin(), Self: self, Store: jepsen.SQLite, Dir: t.TempDir(),
				Fault: c.fault, Trials: c.trials, Parallel: c.parallel, Clients: 3, TTL: 2 * time.Second, Seed: 1, Fence: c.fence})
			if err != nil {
				t.Fatal(err)
			}
			var table strings.Builder
			jepsen.WriteTable(&table, []*jepsen.Result{r})
			t.Log("\n" + table.String())
			if r.Trials != c.trials || r.Jobs < 2*c.trials || r.Stuck != 0 {
				t.Errorf("want %d trials of at least two jobs each, none stuck", c.trials)
			}
			if a := r.Acquire; c.fault == jepsen.FaultKillAcquire {
				t.Log(r.AcquireSummary())
				if a.BeforeCommit+a.Committed+a.AfterStart != 1 || len(a.ToStart) != 1 || a.ToStart[0] <= 0 {
					t.Errorf("want the one kill placed and the probe measured: %+v", a)
				}
			}
			// A job killed with its run may not finish its first write.
			if c.fence && r.FencedAccepted == 0 {
				t.Errorf("no fenced write accepted in %d jobs", r.Jobs)
			}
			if r.Failed() {
				t.Errorf("a check failed: %v", r.Examples)
			}
		})
	}
}
