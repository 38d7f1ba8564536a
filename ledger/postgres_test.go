package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// Two writers whose clocks are 20 minutes apart agree on who is stale:
// on PostgreSQL the database's clock judges, and stamps the events.
func TestPostgresWritersWithSkewedClocksAgreeOnStaleness(t *testing.T) {
	t.Parallel()
	f := &storeFixture{t: t, kind: "postgres", url: pgtest.NewDatabase(t)}
	ctx := context.Background()
	ahead := f.open("host-ahead", ledger.WithClock(testclock.New(time.Now().Add(10*time.Minute)).Now))
	behind := f.open("host-behind", ledger.WithClock(testclock.New(time.Now().Add(-10*time.Minute)).Now))
	before := time.Now()
	got, err := behind.TryAcquire(ctx, ledger.AcquireRequest{Lock: "skew", Identity: as("r1"), TTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	// Judged by its own clock, host-ahead would find the lock 10 minutes
	// past its 5-minute TTL.
	st, err := ahead.Status(ctx, "skew")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != events.StateHeld {
		t.Errorf("state seen by the writer 10 minutes ahead: got %s, want held", st.State)
	}
	var held *ledger.HeldError
	if _, err := ahead.TryAcquire(ctx, ledger.AcquireRequest{Lock: "skew", Identity: as("r2"), Force: true}); !errors.As(err, &held) {
		t.Errorf("forced acquire by the writer 10 minutes ahead: got %v, want a HeldError (the lock is not stale)", err)
	}
	created, err := events.ParseTime(got.Record.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	// The database and this test share a host clock: the event is stamped
	// by it, not by the writer's clock 10 minutes behind.
	if created.Before(before.Add(-time.Second)) || created.After(after.Add(time.Second)) {
		t.Errorf("created_at: got %s, want between %s and %s (the database's clock)", created, before, after)
	}
	verifyOK(t, ahead)
}

func TestPostgresConcurrentFirstOpensMakeOneLedger(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		root := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := ledger.Open(ctx, root, ledger.WithDatabase(url), ledger.Unsigned())
			if err != nil {
				errs[i] = err
				return
			}
			defer l.Close()
			ids[i] = l.ID()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	for i := range ids {
		if ids[i] != ids[0] || ids[i] == "" {
			t.Fatalf("ledger ids: got %q, want one id for every open", ids)
		}
	}
}

func TestPostgresAnotherApplicationsDatabaseGetsNothingAdded(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE invoices (id int)`); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Open(ctx, t.TempDir(), ledger.WithDatabase(url), ledger.Unsigned()); !errors.Is(err, ledger.ErrNotALedger) {
		t.Fatalf("open: got %v, want ErrNotALedger", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("tables after the refused open: got %d, want only invoices", n)
	}
}

func TestPostgresReadOnlyOpenOfAnEmptyDatabaseCreatesNothing(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	if _, err := ledger.Open(context.Background(), t.TempDir(), ledger.WithDatabase(url), ledger.ReadOnly()); !errors.Is(err, ledger.ErrNoLedger) {
		t.Fatalf("read-only open: got %v, want ErrNoLedger", err)
	}
	if _, err := ledger.Open(context.Background(), t.TempDir(), ledger.WithDatabase(url), ledger.MustExist(), ledger.Unsigned()); !errors.Is(err, ledger.ErrNoLedger) {
		t.Fatalf("must-exist open: got %v, want ErrNoLedger", err)
	}
}

func TestPostgresImportKeepsTheLedgerAndEveryHash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := (&storeFixture{t: t, kind: "sqlite", root: t.TempDir()}).open("host-a")
	for _, rid := range []string{"a", "b", "c"} {
		if _, err := src.TryAcquire(ctx, ledger.AcquireRequest{Lock: "m", Identity: as(rid)}); err != nil {
			t.Fatal(err)
		}
		if _, err := src.Release(ctx, ledger.ReleaseRequest{Lock: "m", Identity: as(rid)}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := src.TryAcquire(ctx, ledger.AcquireRequest{Lock: "kept", Identity: as("holder")})
	if err != nil {
		t.Fatal(err)
	}
	// A semaphore slot goes along too (lock_holders).
	if _, err := src.TryAcquire(ctx, ledger.AcquireRequest{Lock: "slots", Identity: as("slot-1"), Limit: 2}); err != nil {
		t.Fatal(err)
	}
	want := verifyOK(t, src)
	// The same root: this host's lock files stay where they are.
	dst, err := ledger.Open(ctx, src.Root(), ledger.WithDatabase(pgtest.NewDatabase(t)), ledger.WithHost(ledger.Host{ID: "host-a", BootID: "boot-host-a"}), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	rep, err := dst.Import(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != want.Events || rep.HeadHash != want.HeadHash || dst.ID() != src.ID() {
		t.Errorf("import: got %d events to %s in ledger %s, want %d to %s in %s", rep.Events, rep.HeadHash, dst.ID(),
			want.Events, want.HeadHash, src.ID())
	}
	got := verifyOK(t, dst)
	if got.HeadHash != want.HeadHash {
		t.Errorf("head after import: got %s, want %s", got.HeadHash, want.HeadHash)
	}
	// The holder kept its lock, and the chain goes on from the import.
	if _, err := dst.Release(ctx, ledger.ReleaseRequest{Lock: "kept", Identity: as("holder")}); err != nil {
		t.Fatal(err)
	}
	next, err := dst.TryAcquire(ctx, ledger.AcquireRequest{Lock: "kept", Identity: as("next")})
	if err != nil {
		t.Fatal(err)
	}
	if next.FencingToken <= held.FencingToken {
		t.Errorf("fencing token after the import: got %d, want above %d", next.FencingToken, held.FencingToken)
	}
	verifyOK(t, dst)
	if _, err := dst.Import(ctx, src); !errors.Is(err, ledger.ErrNotEmpty) {
		t.Errorf("second import: got %v, want ErrNotEmpty", err)
	}
}

// A lock held on host A and force-released from host B leaves A's lock
// file behind (B cannot touch A's files). On A the lock is free: status,
// the next acquirer there and verify must all say so from the row, which
// names A as the last holder.
func TestPostgresForceReleaseFromAnotherHostLeavesTheLockFreeOnTheHolder(t *testing.T) {
	t.Parallel()
	f := &storeFixture{t: t, kind: "postgres", url: pgtest.NewDatabase(t)}
	ctx := context.Background()
	a, b := f.open("host-a"), f.open("host-b")
	if _, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "fr", Identity: ledger.Identity{RequestID: "r1", Actor: "holder", PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Release(ctx, ledger.ReleaseRequest{Lock: "fr", Identity: ledger.Identity{Actor: "op"}, Force: true, Note: "forced from another host"}); err != nil {
		t.Fatal(err)
	}
	st, err := a.Status(ctx, "fr")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != events.StateFree {
		t.Errorf("status on the former holder's host after a forced release elsewhere: got %s, want free", st.State)
	}
	if _, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "fr", Identity: ledger.Identity{RequestID: "r2", Actor: "holder", PID: os.Getpid()}}); err != nil {
		t.Errorf("acquire on the former holder's host: %v", err)
	}
	verifyOK(t, a)
	verifyOK(t, b)
}

// A writer's open as a role that may only read (an auditor's) is refused
// with ErrMayNotAppend before it makes anything: no root, no trust store
// (the default one, as the Go API opens it), no event.
func TestPostgresWriterOpenAsAReadOnlyRoleMakesNothing(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Get(t)
	name := pgtest.CreateDatabase(t)
	owner := c.SocketURL(name)
	l, err := ledger.Open(ctx, t.TempDir(), ledger.WithDatabase(owner), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	db, err := sql.Open("pgx", owner)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	role := "reader_" + strings.ReplaceAll(name, "-", "_")
	for _, q := range []string{"CREATE ROLE " + role + " LOGIN", "GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + role, "GRANT UPDATE ON writer_lock TO " + role} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		db.Exec("DROP OWNED BY " + role)
		db.Exec("DROP ROLE " + role)
	})
	var before int
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(owner)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	dir := t.TempDir()
	root, trustDir := filepath.Join(dir, "root"), filepath.Join(dir, "trust")
	t.Setenv(trust.EnvDir, trustDir)
	if l, err := ledger.Open(ctx, root, ledger.WithDatabase(u.String())); !errors.Is(err, ledger.ErrMayNotAppend) {
		if err == nil {
			l.Close()
		}
		t.Fatalf("a writer's open as a role that may only read: %v, want ErrMayNotAppend", err)
	}
	for _, p := range []string{root, trustDir} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the refused open made %s (%v)", p, err)
		}
	}
	var after int
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("events: %d after the refused open, %d before", after, before)
	}
}
