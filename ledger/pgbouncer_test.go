package ledger_test

// PostgreSQL through PgBouncer in transaction pooling mode: a server
// connection is a client's only for one transaction, so nothing the store
// does may rely on a session outliving one.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testlog"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/migrations"
)

// Two ledgers, as two processes would, write through the same pooler at
// once: the server connections they share hold no statement of either.
func TestPgBouncerTwoLedgersAcquireAtOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.NewBouncedDatabase(t)
	ls := []*ledger.Ledger{
		fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "a", BootID: "boot-a"})),
		fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "b", BootID: "boot-b"})),
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() {
			lock := fmt.Sprintf("lock-%d", i)
			for n := range 10 {
				id := ledger.Identity{RequestID: fmt.Sprintf("r%d-%d", i, n), Actor: "t"}
				if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id}); err != nil {
					t.Errorf("ledger %d, cycle %d: acquire: %v", i, n, err)
					return
				}
				if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: id}); err != nil {
					t.Errorf("ledger %d, cycle %d: release: %v", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	verifyOK(t, ls[0])
}

// Concurrent first opens through the pooler: one creates the tables, the
// others find them made, and no lock is left behind on a server
// connection for the next open to wait on.
func TestPgBouncerConcurrentFirstOpens(t *testing.T) {
	t.Parallel()
	url := pgtest.NewBouncedDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 4
	ls := make([]*ledger.Ledger, n+1)
	var wg sync.WaitGroup
	open := func(i int) {
		l, err := ledger.Open(ctx, t.TempDir(), ledger.WithDatabase(url), ledger.Unsigned(),
			ledger.WithHost(ledger.Host{ID: fmt.Sprintf("h%d", i), BootID: "boot"}), ledger.WithOpenWait(20*time.Second))
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			return
		}
		t.Cleanup(func() { l.Close() })
		ls[i] = l
	}
	for i := range n {
		wg.Go(func() { open(i) })
	}
	wg.Wait()
	open(n) // after them: nothing of theirs holds it up
	if t.Failed() {
		t.FailNow()
	}
	for i, l := range ls {
		if l.ID() != ls[0].ID() {
			t.Errorf("open %d has ledger %q, open 0 %q", i, l.ID(), ls[0].ID())
		}
	}
	var applied int
	if err := pgtest.Open(t, ls[n].Source()).QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if want := migrations.Postgres.Latest(); applied != want {
		t.Errorf("%d migrations applied, want %d", applied, want)
	}
}

// A waiter and a follower of the log through the pooler: LISTEN succeeds
// there but hears nothing, so each store says so once and polls, and a
// waiter still gets the lock once it is released.
func TestPgBouncerWaitersPollAndSaySo(t *testing.T) {
	t.Parallel()
	url := pgtest.NewBouncedDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const said = "LISTEN/NOTIFY does not work on this connection"
	awaitSaid := func(t *testing.T, log *testlog.Buffer, w interface {
		Wait(context.Context, time.Duration)
	}) {
		t.Helper()
		for !strings.Contains(log.String(), said) {
			if ctx.Err() != nil {
				t.Fatalf("no warning that notifications do not arrive; log:\n%s", log)
			}
			w.Wait(ctx, 50*time.Millisecond)
		}
	}
	holder := fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "holder", BootID: "boot"}))
	id := ledger.Identity{RequestID: "r1", Actor: "t"}
	if _, err := holder.TryAcquire(ctx, ledger.AcquireRequest{Lock: "n", Identity: id}); err != nil {
		t.Fatal(err)
	}

	t.Run("waiter", func(t *testing.T) {
		var log testlog.Buffer
		waiter := fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "waiter", BootID: "boot"}),
			ledger.WithBusyTimeout(time.Second), ledger.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		w := waiter.Watch("n")
		defer w.Close()
		awaitSaid(t, &log, w)
		// Its follower of the log polls from the start: said once.
		wk, err := waiter.WatchLog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wk.Wait(ctx, time.Millisecond)
		wk.Close()
		if _, err := holder.Release(ctx, ledger.ReleaseRequest{Lock: "n", Identity: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := lease.Wait(ctx, waiter, ledger.AcquireRequest{Lock: "n", Identity: ledger.Identity{RequestID: "r2", Actor: "t"}},
			30*time.Second, nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(log.String(), said); got != 1 {
			t.Errorf("said %d times, want once:\n%s", got, log.String())
		}
		if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "PgBouncer") {
			t.Errorf("want a warning that names the pooler:\n%s", log.String())
		}
	})

	t.Run("follower", func(t *testing.T) {
		var log testlog.Buffer
		follower := fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "follower", BootID: "boot"}),
			ledger.WithBusyTimeout(time.Second), ledger.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		wk, err := follower.WatchLog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer wk.Close()
		awaitSaid(t, &log, wk)
	})
}
