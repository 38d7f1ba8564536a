package lease_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// TestSupersedingAJobOnAnotherHostSaysItCannotBeAwaited: nothing on this
// host can see the processes of a holder on another one, so the wait says
// so and returns at once instead of waiting for them or killing anything.
func TestSupersedingAJobOnAnotherHostSaysItCannotBeAwaited(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	far, err := ledger.Open(ctx, root, ledger.WithHost(ledger.Host{ID: "far-away", BootID: "other-boot"}), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	if _, err := far.TryAcquire(ctx, ledger.AcquireRequest{Lock: "issue-9", Identity: ledger.Identity{RequestID: "old-run", PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
	here, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	s, err := lease.Acquire(ctx, here, ledger.AcquireRequest{Lock: "issue-9", Identity: ledger.Identity{RequestID: "new-run"}}, lease.WithSupersede())
	if err != nil {
		t.Fatal(err)
	}
	sup, err := s.AwaitSuperseded(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if sup.RequestID != "old-run" || !strings.Contains(sup.NotAwaited, "host far-away") || len(sup.Killed) != 0 || len(sup.Earlier) != 0 {
		t.Fatalf("AwaitSuperseded: %+v, want old-run not awaited because it is on host far-away", sup)
	}
	if err := s.Release(ctx, lease.Result{Result: events.ResultSuccess}); err != nil {
		t.Fatal(err)
	}
}
