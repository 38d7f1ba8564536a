package ledger_test

import (
	"context"
	"os"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// A lock held on host A and force-released from host B leaves A's lock
// file behind (B cannot touch A's files). On A the lock is free: status,
// the next acquirer there and verify must all say so from the row, which
// names A as the last holder.
func TestPostgresForceReleaseFromAnotherHostLeavesTheLockFreeOnTheHolder(t *testing.T) {
	f := &storeFixture{t: t, kind: "postgres", url: pgtest.NewDatabase(t)}
	ctx := context.Background()
	a, b := f.open("host-a"), f.open("host-b")
	if _, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "fr", Identity: ledger.Identity{RequestID: "r1", Actor: "review", PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Release(ctx, ledger.ReleaseRequest{Lock: "fr", Identity: ledger.Identity{Actor: "op"}, Force: true, Note: "review"}); err != nil {
		t.Fatal(err)
	}
	st, err := a.Status(ctx, "fr")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != events.StateFree {
		t.Errorf("status on the former holder's host after a forced release elsewhere: got %s, want free", st.State)
	}
	if _, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "fr", Identity: ledger.Identity{RequestID: "r2", Actor: "review", PID: os.Getpid()}}); err != nil {
		t.Errorf("acquire on the former holder's host: %v", err)
	}
	verifyOK(t, a)
	verifyOK(t, b)
}
