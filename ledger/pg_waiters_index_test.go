package ledger_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/oldschema"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/migrations"
)

// A PostgreSQL ledger schema version 12 left, with a holder and a waiter,
// reads as it stands (verify clean, its read function 0012's), and its
// first open for writing migrates it: the waiters' index made over the
// events it holds, the read function replaced, and the decisions go on
// from the same queue.
func TestPostgresLedgerOfSchema12MigratesWithItsQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	root := t.TempDir()
	open := func(opts ...ledger.Option) *ledger.Ledger {
		t.Helper()
		l, err := ledger.Open(ctx, root, append(opts, ledger.WithHost(ledger.Host{ID: "host-a", BootID: "boot-host-a"}),
			ledger.Unsigned(), ledger.WithDatabase(url))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	me := func(rid string) ledger.Identity {
		return ledger.Identity{RequestID: rid, Actor: "migration", PID: os.Getpid()}
	}
	l := open()
	for _, rid := range []string{"r1", "r2", "r3"} {
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: me(rid), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if rid != "r3" {
			if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "x", Identity: me(rid)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := l.TryAcquire(ctx, waitFor("x", me("w"))); err == nil {
		t.Fatal("w took x from its live holder")
	}
	l.Close()

	db := pgtest.Open(t, url)
	old, err := oldschema.Postgres12()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range old {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	version := func() int {
		t.Helper()
		v, err := migrations.Postgres.Current(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := version(); v != 12 {
		t.Fatalf("the old schema is at version %d, want 12", v)
	}
	ro := open(ledger.ReadOnly())
	verifyOK(t, ro)
	if got := queuedIDs(t, ro, "x"); !slices.Equal(got, []string{"w"}) {
		t.Fatalf("x's queue at version 12: %v, want w", got)
	}
	ro.Close()
	if v := version(); v != 12 {
		t.Fatalf("a read-only open moved the schema to version %d", v)
	}

	l = open()
	if v := version(); v != migrations.Postgres.Latest() {
		t.Fatalf("the first open for writing left version %d, want %d", v, migrations.Postgres.Latest())
	}
	var indexed int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'events_waiters'`).Scan(&indexed); err != nil || indexed != 1 {
		t.Fatalf("events_waiters: %d (%v), want the index", indexed, err)
	}
	verifyOK(t, l)
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "x", Identity: me("r3")}); err != nil {
		t.Fatal(err)
	}
	// The queue the decisions read after the migration is the one recorded
	// before it: w is next, not a caller that does not wait.
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: me("other"), TTL: time.Hour}); err == nil {
		t.Error("a caller that does not wait took x before its queued waiter")
	}
	if _, err := l.TryAcquire(ctx, waitFor("x", me("w"))); err != nil {
		t.Fatalf("the queued waiter: %v", err)
	}
	if got := queuedIDs(t, l, "x"); len(got) != 0 {
		t.Errorf("x's queue after w took it: %v", got)
	}
	verifyOK(t, l)
}
