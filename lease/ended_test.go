package lease_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// robbery is one way another process ends a lease's holding.
type robbery struct {
	name string
	rob  func(ctx context.Context, l *ledger.Ledger, s *lease.Lease) error
	// what EndedBy must say
	typ    events.Type
	actor  string
	note   string
	reason string
}

var robberies = []robbery{
	{"forced release", func(ctx context.Context, l *ledger.Ledger, s *lease.Lease) error {
		_, err := l.Release(ctx, ledger.ReleaseRequest{Lock: s.Lock(), Identity: ledger.Identity{RequestID: s.RequestID(), Actor: "robber"},
			Force: true, Note: "robbed"})
		return err
	}, events.LockReleased, "robber", "robbed", ""},
	{"release under its request id", func(ctx context.Context, l *ledger.Ledger, s *lease.Lease) error {
		_, err := l.Release(ctx, ledger.ReleaseRequest{Lock: s.Lock(), Identity: ledger.Identity{RequestID: s.RequestID(), Actor: "robber"}})
		return err
	}, events.LockReleased, "robber", "", ""}, // recorded as its caller's, held_by naming the holder
	{"steal", func(ctx context.Context, l *ledger.Ledger, s *lease.Lease) error {
		_, err := l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: s.Lock(),
			Identity: ledger.Identity{RequestID: "robber-req", Actor: "robber"}}, Active: true, Note: "robbed"})
		return err
	}, events.LockStolen, "robber", "robbed", events.ReasonForcedActive},
}

// A lease whose holding another process ends learns it as the lock
// changes, not at its next heartbeat (here 30 s away): Lost closes, Err
// names who ended it, the loss is recorded, and Release reports it.
func TestLeaseIsLostAtOnceWhenAnotherEndsItsHolding(t *testing.T) {
	for _, r := range robberies {
		t.Run(r.name, func(t *testing.T) {
			root := t.TempDir()
			robbedAt(t, fixture.Open(t, root), fixture.Open(t, root), r)
		})
	}
}

// On PostgreSQL the robber is another host: no lock file of the holder's
// changes, and the database's notification is what wakes the lease.
func TestPostgresLeaseIsLostAtOnceWhenAnotherHostEndsItsHolding(t *testing.T) {
	url := pgtest.NewDatabase(t)
	for _, r := range robberies {
		t.Run(r.name, func(t *testing.T) {
			holder := fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "holder-host"}))
			robber := fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "robber-host"}))
			robbedAt(t, holder, robber, r)
		})
	}
}

func robbedAt(t *testing.T, holder, robber *ledger.Ledger, r robbery) {
	t.Helper()
	ctx := context.Background()
	lock := "robbed-" + string(r.typ)
	if r.note == "" {
		lock += "-plain"
	}
	s, err := lease.Acquire(ctx, holder, ledger.AcquireRequest{Lock: lock, Identity: ledger.Identity{Actor: "holder", PID: os.Getpid()},
		TTL: 90 * time.Second}, lease.WithHeartbeatInterval(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(ctx, lease.Result{})
	if err := r.rob(ctx, robber, s); err != nil {
		t.Fatal(err)
	}
	robbed := time.Now()
	select {
	case <-s.Lost():
	case <-time.After(10 * time.Second):
		t.Fatalf("the lease did not learn of the %s within 10 s (its next heartbeat is 30 s away)", r.name)
	}
	t.Logf("%s: lost %s after the robbing call returned", r.name, time.Since(robbed))
	var nh *ledger.NotHolderError
	if !errors.As(s.Err(), &nh) || !errors.Is(s.Err(), ledger.ErrLost) {
		t.Fatalf("Err = %v, want a *ledger.NotHolderError wrapping ErrLost", s.Err())
	}
	end := nh.EndedBy
	if end == nil || end.Type != r.typ || end.Actor != r.actor || end.Note != r.note || end.Reason != r.reason || end.PID != os.Getpid() {
		t.Fatalf("EndedBy = %+v, want %s by %s (note %q, reason %q)", end, r.typ, r.actor, r.note, r.reason)
	}
	if _, user, ok := end.OSUser(); !ok || user == "" {
		t.Fatalf("EndedBy names no OS user: %+v", end)
	}
	if err := s.Release(ctx, lease.Result{}); !errors.Is(err, ledger.ErrLost) {
		t.Fatalf("Release after the loss: %v, want ErrLost", err)
	}
	awaitEvent(t, holder, events.HeartbeatFailed, 10*time.Second, func(p any) bool {
		hf, ok := p.(*events.HeartbeatFailedPayload)
		return ok && hf.LockLost
	})
}

// A lease released under its own request id by another process, and
// released by its holder before the watch could tell, still reports the
// loss: the work ran on without the lock.
func TestLeaseReleaseReportsAHoldingAnotherReleasedFirst(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	holder, robber := fixture.Open(t, root), fixture.Open(t, root)
	s, err := lease.Acquire(ctx, holder, ledger.AcquireRequest{Lock: "first", TTL: 90 * time.Second}, lease.WithHeartbeatInterval(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := robberies[1].rob(ctx, robber, s); err != nil {
		t.Fatal(err)
	}
	err = s.Release(ctx, lease.Result{})
	var nh *ledger.NotHolderError
	if !errors.Is(err, ledger.ErrLost) || !errors.As(err, &nh) || nh.EndedBy == nil || nh.EndedBy.Type != events.LockReleased {
		t.Fatalf("Release = %v, want the loss, naming the release", err)
	}
}
