package ledger_test

import (
	"context"
	"database/sql"
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
	toSchema12(t, db)
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

// A migration this process makes is not cut short by the time an open
// gives itself to find the ledger (its busy timeout, the 2 s of a verify's
// record): on a long log its index takes longer. Here the migration's index
// build waits behind another session's lock on events for longer than the
// open's whole wait, and the open still migrates once that lock goes.
func TestPostgresMigrationOutlastsTheOpensWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	root := t.TempDir()
	const wait = 300 * time.Millisecond
	open := func(opts ...ledger.Option) (*ledger.Ledger, error) {
		return ledger.Open(ctx, root, append(opts, ledger.WithHost(ledger.Host{ID: "host-a", BootID: "boot-host-a"}),
			ledger.Unsigned(), ledger.WithDatabase(url))...)
	}
	l, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: ledger.Identity{RequestID: "r1", Actor: "t", PID: os.Getpid()}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	db := pgtest.Open(t, url)
	toSchema12(t, db)
	// A session that writes events keeps the index build (SHARE) waiting.
	blocker, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := blocker.ExecContext(ctx, `LOCK TABLE events IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	type opened struct {
		l   *ledger.Ledger
		err error
	}
	done := make(chan opened, 1)
	go func() {
		l, err := open(ledger.WithBusyTimeout(wait))
		done <- opened{l, err}
	}()
	for {
		var waiting bool
		if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'events'::regclass AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case o := <-done:
			t.Fatalf("the open ended before its migration waited for the table: %v", o.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Held past the open's whole wait, then let go.
	select {
	case o := <-done:
		t.Fatalf("the open ended while its migration waited for the table: %v", o.err)
	case <-time.After(time.Until(start.Add(3 * wait))):
	}
	if err := blocker.Rollback(); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("an open whose migration outlasted its wait: %v", o.err)
	}
	defer o.l.Close()
	var v int
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != migrations.Postgres.Latest() {
		t.Fatalf("schema %d after the open, want %d", v, migrations.Postgres.Latest())
	}
}

// toSchema12 turns the ledger in db into the one schema version 12 left
// (oldschema.Postgres12).
func toSchema12(t *testing.T, db *sql.DB) {
	t.Helper()
	old, err := oldschema.Postgres12()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range old {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
