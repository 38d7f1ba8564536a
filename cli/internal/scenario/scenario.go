// Package scenario writes the scripted ledger the command line's tests
// read: eight events of four actors on two locks, at known instants.
package scenario

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
)

// T0 is the scripted scenario's start.
var T0 = time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)

// Instant is T0 + s seconds.
func Instant(s float64) time.Time { return T0.Add(time.Duration(s * float64(time.Second))) }

// At is T0 + s seconds, as the CLI takes it.
func At(s float64) string { return Instant(s).Format(time.RFC3339Nano) }

// Host is the host id of the scenario's events.
const Host = "ci-runner-1"

// Write writes, through the ledger API with a scripted clock, into a
// real ledger at a fresh root:
//
//	seq 1  t0+0    alice acquires app-prod (ttl 60s, intent deploy v42, ticket=INC-7)
//	seq 2  t0+10   bob acquires db-migrate (ttl 600s)
//	seq 3  t0+30   alice heartbeats app-prod
//	seq 4  t0+45   bob is blocked on app-prod after waiting 5s
//	seq 5  t0+50   alice releases app-prod: failure at step migrate, exit 3
//	seq 6  t0+60   carol acquires app-prod (ttl 30s); stale from t0+90
//	seq 7  t0+200  dave takes the stale lock with --force (stale_lock_forced)
//	seq 8  t0+210  dave releases app-prod
func Write(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	c := testclock.New(T0)
	l, err := ledger.Open(ctx, root, ledger.WithClock(c.Now),
		ledger.WithHost(ledger.Host{ID: Host, BootID: ledger.ThisHost().BootID}), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pid := os.Getpid()
	id := func(actor, rid string) ledger.Identity {
		return ledger.Identity{Actor: actor, RequestID: rid, PID: pid}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	acquire := func(req ledger.AcquireRequest) error {
		_, err := l.TryAcquire(ctx, req)
		return err
	}
	release := func(req ledger.ReleaseRequest) error {
		_, err := l.Release(ctx, req)
		return err
	}
	must(acquire(ledger.AcquireRequest{Lock: "app-prod", Identity: id("alice", "req-alice"), TTL: time.Minute,
		Intent: "deploy", IntentVersion: "v42", Metadata: map[string]string{"ticket": "INC-7"}}))
	c.Set(Instant(10))
	must(acquire(ledger.AcquireRequest{Lock: "db-migrate", Identity: id("bob", "req-bob-db"), TTL: 10 * time.Minute}))
	c.Set(Instant(30))
	_, err = l.Heartbeat(ctx, "app-prod", id("alice", "req-alice"))
	must(err)
	c.Set(Instant(45))
	if err := acquire(ledger.AcquireRequest{Lock: "app-prod", Identity: id("bob", "req-bob"), TTL: time.Minute,
		RecordBlocked: true, Waited: 5 * time.Second}); err == nil {
		t.Fatal("bob was not blocked")
	}
	c.Set(Instant(50))
	code := 3
	must(release(ledger.ReleaseRequest{Lock: "app-prod", Identity: id("alice", "req-alice"),
		Result: "failure", FailureStep: "migrate", ExitCode: &code}))
	c.Set(Instant(60))
	must(acquire(ledger.AcquireRequest{Lock: "app-prod", Identity: id("carol", "req-carol"), TTL: 30 * time.Second}))
	c.Set(Instant(200))
	must(acquire(ledger.AcquireRequest{Lock: "app-prod", Identity: id("dave", "req-dave"), TTL: time.Minute, Force: true}))
	c.Set(Instant(210))
	must(release(ledger.ReleaseRequest{Lock: "app-prod", Identity: id("dave", "req-dave")}))
	return root
}
