package auditcmd_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/cli/internal/scenario"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
)

// TestVerifyClockSkewJudgesAClockSteppedBack: a ledger whose host clock
// was stepped back twice by 1.5s (3s behind its latest event in all) fails
// verify by default (time_backwards at the second step) and passes with
// --clock-skew 3s; a bad --clock-skew is invalid input.
func TestVerifyClockSkewJudgesAClockSteppedBack(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	c := testclock.New(scenario.T0)
	l, err := ledger.Open(ctx, root, ledger.WithClock(c.Now), ledger.WithHost(ledger.Host{ID: scenario.Host, BootID: "boot-1"}), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	id := ledger.Identity{Actor: "alice", RequestID: "req-alice", PID: os.Getpid()}
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "app-prod", Identity: id, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c.Set(scenario.Instant(60))
	if _, err := l.Heartbeat(ctx, "app-prod", id); err != nil {
		t.Fatal(err)
	}
	c.Set(scenario.Instant(58.5)) // NTP steps the clock back 1.5s
	if _, err := l.Heartbeat(ctx, "app-prod", id); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c.Set(scenario.Instant(57)) // and a second time, 1.5s more: 3s behind seq 2 in all
	l, err = ledger.Open(ctx, root, ledger.WithClock(c.Now), ledger.WithHost(ledger.Host{ID: scenario.Host, BootID: "boot-1"}), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "app-prod", Identity: id}); err != nil {
		t.Fatal(err)
	}
	v := clitest.Verify(t, 1, root)
	if v.FirstBad == nil || v.FirstBad.Seq != 4 || v.FirstBad.Kind != "time_backwards" || len(v.Problems) != 1 {
		t.Fatalf("default tolerance: %+v", v)
	}
	if !strings.Contains(v.FirstBad.Detail, "seq 2") || !strings.Contains(v.FirstBad.Detail, "--clock-skew") {
		t.Errorf("the finding does not name the event it steps back from, or the flag: %s", v.FirstBad.Detail)
	}
	clitest.Verify(t, 0, root, "--clock-skew", "3s")
	clitest.Verify(t, 0, root, "--clock-skew", "10")
	for _, bad := range []string{"-1s", "soon", ""} {
		r := clitest.Must(t, 2, root, "verify", "--clock-skew", bad)
		if !strings.Contains(r.Stderr, "--clock-skew") {
			t.Errorf("--clock-skew %q: %s", bad, r.Stderr)
		}
	}
}
