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

// One very short real run, so that the harness cannot rot: three clients on
// SQLite, their holder's run killed, every check passing (a kill leaves no
// job running on; the pause classes are make jepsen's).
func TestSmokeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := jepsen.RunClass(ctx, jepsen.Config{Bin: clitest.Bin(), Self: self, Store: jepsen.SQLite, Dir: t.TempDir(),
		Fault: jepsen.FaultKillRun, Trials: 1, Clients: 3, TTL: 2 * time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	jepsen.WriteTable(&table, []*jepsen.Result{r})
	t.Log("\n" + table.String())
	if r.Trials != 1 || r.Jobs < 2 || r.Stuck != 0 {
		t.Errorf("want one trial of at least two jobs, not stuck")
	}
	if r.Failed() {
		t.Errorf("a check failed: %v", r.Examples)
	}
}
