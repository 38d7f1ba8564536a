package ledger_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// A lease taken over by the request that already holds the lock counts its
// deadline from the lock's last heartbeat. On PostgreSQL that heartbeat is
// the database's time: measured against this host's clock, 10 minutes
// ahead, the heartbeat looks 10 minutes old, and the lease is lost at once
// although the lock has minutes of its TTL left.
func TestPostgresLeaseOfAnAlreadyHeldLockIgnoresTheLocalClock(t *testing.T) {
	f := &storeFixture{t: t, kind: "postgres", url: pgtest.NewDatabase(t)}
	ctx := context.Background()
	ahead := f.open("host-ahead", ledger.WithClock(func() time.Time { return time.Now().Add(10 * time.Minute) }))
	id := ledger.Identity{RequestID: "r1", Actor: "review", PID: os.Getpid()}
	if _, err := ahead.TryAcquire(ctx, ledger.AcquireRequest{Lock: "again", Identity: id, TTL: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	lease, err := ahead.Acquire(ctx, "again", ledger.WithRequestID("r1"), ledger.WithActor("review"), ledger.WithPID(os.Getpid()),
		ledger.WithTTL(5*time.Minute), ledger.WithHeartbeatInterval(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx, ledger.Result{})
	if !lease.Acquisition().Already {
		t.Fatalf("second acquire by the same request: want Already")
	}
	// The heartbeat was stamped just now by the database: the deadline is
	// the TTL less the margin away (3m45s), not 10 minutes in the past.
	if left := time.Until(ledger.LeaseDeadline(lease)); left < 3*time.Minute {
		t.Fatalf("local deadline %s away with 5 minutes of TTL left (lost: %v)", left, lease.Err())
	}
}

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
