package ledger

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lockledger/lockledger/internal/oldschema"
	"github.com/lockledger/lockledger/internal/proc"
)

// A ledger schema 9 left (its exclusive holder in the locks row, the
// shared ones in lock_holders) opens with one table of holders: verify is
// clean, status shows the same holders, and writes go on from there.
func TestOldLedgerOpensWithOneHoldersTable(t *testing.T) {
	ctx := context.Background()
	e := open(t)
	for _, pid := range []int{101, 102, 103, 104} {
		e.probe.set(pid, proc.Alive, "1")
	}
	x := req("x", "rx", 101)
	x.Metadata = map[string]string{"ticket": "T-1"}
	if _, err := e.l.TryAcquire(ctx, x); err != nil {
		t.Fatal(err)
	}
	for i, rid := range []string{"r1", "r2"} {
		r := req("pool", rid, 102+i)
		r.Limit = 2
		if _, err := e.l.TryAcquire(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.l.TryAcquire(ctx, req("gone", "rg", 104)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Release(ctx, ReleaseRequest{Lock: "gone", Identity: Identity{RequestID: "rg", Actor: "t", PID: 104}}); err != nil {
		t.Fatal(err)
	}
	status := func(l *Ledger) string {
		t.Helper()
		var out []*LockStatus
		for _, lock := range []string{"x", "pool", "gone"} {
			s, err := l.Status(ctx, lock)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := status(e.l)
	e.l.Close()

	db := rawDB(t, e.root)
	for _, q := range oldschema.Version9 {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var held, shared int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM locks WHERE held = 1), (SELECT count(*) FROM lock_holders)`).Scan(&held, &shared); err != nil || held != 1 || shared != 2 {
		t.Fatalf("schema 9: %d held locks rows, %d lock_holders rows (%v); want 1 and 2", held, shared, err)
	}

	l, err := Open(ctx, e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe), WithHost(Host{ID: "host-a", BootID: "boot-1"}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var exclusive int
	if err := l.DB().QueryRow(`SELECT count(*) FROM lock_holders WHERE exclusive = 1 AND lock_name = 'x' AND request_id = 'rx' AND slot_limit = 1`).Scan(&exclusive); err != nil || exclusive != 1 {
		t.Fatalf("x's exclusive holder in lock_holders: %d rows (%v), want 1", exclusive, err)
	}
	rep, err := l.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("verify after the migration: %+v", rep.Problems)
	}
	if after := status(l); after != before {
		t.Errorf("status after the migration:\n%s\nbefore:\n%s", after, before)
	}
	// The holders are held: x refuses another, the full semaphore too; the
	// holders renew and release as before.
	if _, err := l.TryAcquire(ctx, req("x", "other", 103)); err == nil {
		t.Error("another request took x from its live holder")
	}
	r3 := req("pool", "r3", 103)
	r3.Limit = 2
	if _, err := l.TryAcquire(ctx, r3); err == nil {
		t.Error("a third request took a slot of the full semaphore")
	}
	if _, err := l.Heartbeat(ctx, "x", x.Identity); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Release(ctx, ReleaseRequest{Lock: "x", Identity: x.Identity}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, req("x", "next", 103)); err != nil {
		t.Fatal(err)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify after the writes: %v %+v", err, rep)
	}
}
