package lease_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// A lease of a lock its request already holds renews nothing: the lock runs
// on its last heartbeat, so the lease's deadline must count from that
// heartbeat, not from the acquire, on every path that can find the lock
// already held (exclusive or shared, taken or superseded). Here the
// heartbeat is 30 s old: counted from the acquire, the deadline would end
// 30 s after the lock's TTL runs out by the ledger.
func TestLeaseOfAnAlreadyHeldLockCountsFromItsLastHeartbeat(t *testing.T) {
	const age, ttl = 30 * time.Second, time.Minute
	for _, c := range []struct {
		name   string
		shared bool
		opts   []lease.Option
	}{
		{"exclusive", false, nil},
		{"exclusive superseding", false, []lease.Option{lease.WithSupersede()}},
		{"shared", true, nil},
		{"shared superseding", true, []lease.Option{lease.WithSupersede()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			behind, err := ledger.Open(ctx, root, ledger.WithClock(testclock.New(time.Now().Add(-age)).Now), ledger.Unsigned())
			if err != nil {
				t.Fatal(err)
			}
			defer behind.Close()
			id := ledger.Identity{RequestID: "r1", PID: os.Getpid()}
			if _, err := behind.TryAcquire(ctx, ledger.AcquireRequest{Lock: "again", Identity: id, TTL: ttl, Shared: c.shared}); err != nil {
				t.Fatal(err)
			}
			l := fixture.Open(t, root)
			start := time.Now()
			s, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "again", Identity: id, TTL: ttl, Shared: c.shared}, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release(ctx, lease.Result{})
			if !s.Acquisition().Already {
				t.Fatalf("second acquire by the same request: want Already")
			}
			want := start.Add(ttl - lease.DefaultLossMargin(ttl) - age)
			if got := lease.Deadline(s); got.After(want.Add(5 * time.Second)) {
				t.Fatalf("local deadline %s after the acquire, want at most %s: counted from the acquire, not from the heartbeat %s old",
					got.Sub(start), want.Sub(start)+5*time.Second, age)
			}
		})
	}
}

// A lease taken over by the request that already holds the lock counts its
// deadline from the lock's last heartbeat. On PostgreSQL that heartbeat is
// the database's time: measured against this host's clock, 10 minutes
// ahead, the heartbeat looks 10 minutes old, and the lease is lost at once
// although the lock has minutes of its TTL left.
func TestPostgresLeaseOfAnAlreadyHeldLockIgnoresTheLocalClock(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	ahead := fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "host-ahead", BootID: "boot-host-ahead"}),
		ledger.WithClock(testclock.New(time.Now().Add(10*time.Minute)).Now))
	id := ledger.Identity{RequestID: "r1", Actor: "holder", PID: os.Getpid()}
	if _, err := ahead.TryAcquire(ctx, ledger.AcquireRequest{Lock: "again", Identity: id, TTL: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	s, err := lease.Acquire(ctx, ahead, ledger.AcquireRequest{Lock: "again", Identity: ledger.Identity{RequestID: "r1", Actor: "holder", PID: os.Getpid()},
		TTL: 5 * time.Minute}, lease.WithHeartbeatInterval(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(ctx, lease.Result{})
	if !s.Acquisition().Already {
		t.Fatalf("second acquire by the same request: want Already")
	}
	// The heartbeat was stamped just now by the database: the deadline is
	// the TTL less the margin away (3m45s), not 10 minutes in the past.
	if left := time.Until(lease.Deadline(s)); left < 3*time.Minute {
		t.Fatalf("local deadline %s away with 5 minutes of TTL left (lost: %v)", left, s.Err())
	}
}
