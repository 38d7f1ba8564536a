package lease_test

import (
	"context"
	"database/sql"
	"errors"
	neturl "net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// A restart of the database, or an outage of a few seconds, under a
// working fleet is no failure anyone sees: a write in flight when the
// server ends its session (a fast shutdown's 57P01; an immediate one's, or
// a crash's, closed connection) is made again once the server is back, a holder
// whose heartbeats fail for less than its deadline keeps its lock, and a
// waiter gets the lock in its turn. The log verifies afterwards.
func TestPostgresRestartUnderAFleet(t *testing.T) {
	c := pgtest.Private(t)
	b, berr := c.StartBouncer()
	if berr != nil && (!errors.Is(berr, pgtest.ErrNoBouncer) || os.Getenv("LOCKLEDGER_CI") == "1") {
		t.Fatal(berr)
	}
	type restart struct {
		name string
		// mode is Down's, or SIGKILL for a backend killed (the other
		// sessions then ended by the server, which recovers by itself).
		mode syscall.Signal
		down time.Duration // how long the server stays down
	}
	for _, via := range []string{"direct", "pgbouncer"} {
		for _, r := range []restart{
			{"fast", pgtest.Fast, 0},
			{"immediate", pgtest.Immediate, 0},
			{"down for 3s", pgtest.Fast, 3 * time.Second},
			{"crash of a backend", syscall.SIGKILL, 0},
		} {
			t.Run(via+"/"+r.name, func(t *testing.T) {
				if via == "pgbouncer" && berr != nil {
					t.Skipf("SKIPPED: %v, so this test cannot run here (CI installs it)", berr)
				}
				name := "restart_" + via + "_" + strings.Fields(r.name)[0]
				if err := c.CreateDatabase(name); err != nil {
					t.Fatal(err)
				}
				url := c.SocketURL(name)
				if via == "pgbouncer" {
					url = b.URL(name)
				}
				restartUnderAFleet(t, c, url, r.name, r.mode, r.down)
			})
		}
	}
}

// restartUnderAFleet is TestPostgresRestartUnderAFleet's check of one
// restart of c (Down in mode, down long, Up; or a backend killed) with
// the fleet on url.
func restartUnderAFleet(t *testing.T, c *pgtest.Cluster, url, restart string, mode syscall.Signal, down time.Duration) {
	ctx := context.Background()
	// The sessions of the writes in flight at the restart carry a
	// name of their own, so that the test can see them wait in the
	// server: an acquire, and a release. The others name themselves too:
	// PgBouncer sets a client's name on the server connection it lends
	// only where the client gave one, and would leave "inflight" there.
	holder := fixture.OpenPostgres(t, url+"&application_name=fleet", ledger.WithHost(ledger.Host{ID: "holder-host"}))
	waiter := fixture.OpenPostgres(t, url+"&application_name=fleet", ledger.WithHost(ledger.Host{ID: "waiter-host"}))
	writer := fixture.OpenPostgres(t, url+"&application_name=inflight", ledger.WithHost(ledger.Host{ID: "writer-host"}))
	finisher := fixture.OpenPostgres(t, url+"&application_name=inflight", ledger.WithHost(ledger.Host{ID: "finisher-host"}))
	req := func(lock string) ledger.AcquireRequest {
		return ledger.AcquireRequest{Lock: lock, Identity: ledger.Identity{Actor: "t", PID: os.Getpid()}, TTL: 30 * time.Second}
	}

	// Its deadline 12 s after the last heartbeat that got through: past the
	// 3 s outage, the shutdown and the start, and PgBouncer's second before
	// it logs in again, on a loaded machine.
	const ttl = 16 * time.Second
	s, err := lease.Acquire(ctx, holder, ledger.AcquireRequest{Lock: "job", Identity: ledger.Identity{Actor: "t", PID: os.Getpid()}, TTL: ttl},
		lease.WithHeartbeatInterval(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done, err := lease.Acquire(ctx, finisher, req("done"), lease.WithHeartbeatInterval(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		a   *ledger.Acquisition
		err error
	}
	waited, written, released := make(chan result, 1), make(chan result, 1), make(chan error, 1)
	go func() {
		a, err := lease.Wait(ctx, waiter, req("job"), time.Minute, nil)
		waited <- result{a, err}
	}()

	// Another host keeps the writer lock, so that the writes are in
	// flight, waiting on the server, when it shuts down.
	// The admin reaches the server itself: through the pool, its
	// transaction would hold a server connection the fleet's need.
	admin, err := sql.Open("pgx", c.SocketURL(strings.TrimPrefix(urlPath(t, url), "/")))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// None of its connections outlives the restart, so that each
	// query after it connects anew.
	admin.SetMaxIdleConns(0)
	tx, err := admin.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`SELECT id FROM writer_lock FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	go func() {
		a, err := lease.Wait(ctx, writer, req("other"), time.Minute, nil)
		written <- result{a, err}
	}()
	go func() { released <- done.Release(ctx, lease.Result{Result: "success"}) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'inflight' AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the acquire and the release wait for the writer lock, want both", n)
		}
	}

	before := heartbeats(t, admin)
	if mode == syscall.SIGKILL {
		// The other host's own backend: as the OOM killer would.
		var pid int
		if err := tx.QueryRow(`SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Whatever the fleet does, the server is up again before the test
		// goes on (or the next one starts).
		defer func() {
			for deadline := time.Now().Add(time.Minute); c.Exec("SELECT 1") != nil; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the server did not recover from the killed backend within a minute")
				}
			}
		}()
	} else {
		if err := c.Down(mode); err != nil {
			t.Fatal(err)
		}
		// The outage: how long the server stays unreachable is the point.
		time.Sleep(down)
		if err := c.Up(); err != nil {
			t.Fatal(err)
		}
	}

	select {
	case r := <-written:
		if r.err != nil {
			t.Fatalf("the write in flight at the %s restart failed: %v", restart, r.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the write in flight at the restart never returned")
	}
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("the release in flight at the %s restart failed: %v", restart, err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the release in flight at the restart never returned")
	}
	// A heartbeat gets through after the restart, and the holding
	// stands.
	for deadline := time.Now().Add(10 * time.Second); heartbeats(t, admin) <= before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat got through within 10 s of the restart; the lease: %v", s.Err())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("the holder lost its lock to a restart shorter than its deadline: %v", err)
	}
	if err := s.Release(ctx, lease.Result{Result: "success"}); err != nil {
		t.Fatalf("release after the restart: %v", err)
	}
	select {
	case r := <-waited:
		if r.err != nil {
			t.Fatalf("the waiter failed across the restart: %v", r.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter never got the lock released after the restart")
	}
	// Each write in flight was made once: retried, not doubled.
	for _, once := range []struct {
		typ  events.Type
		lock string
	}{{events.LockAcquired, "other"}, {events.LockReleased, "done"}, {events.LockReleased, "job"}, {events.LockAcquired, "job"}} {
		var n int
		if err := admin.QueryRow(`SELECT count(*) FROM events WHERE type = $1 AND lock_name = $2`, string(once.typ), once.lock).Scan(&n); err != nil {
			t.Fatal(err)
		}
		want := 1
		if once.lock == "job" && once.typ == events.LockAcquired {
			want = 2 // the holder's, then the waiter's
		}
		if n != want {
			t.Errorf("%d %s of %s, want %d", n, once.typ, once.lock, want)
		}
	}
	rep, err := holder.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("verify after the restart: %+v", rep.Problems)
	}
}

// urlPath is the path of url, the database's name after a slash.
func urlPath(t *testing.T, raw string) string {
	t.Helper()
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// heartbeats is how many lock_heartbeat events the ledger on db holds.
func heartbeats(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE type = $1`, string(events.LockHeartbeat)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A wait whose every attempt finds the database down says so, and not that
// the ledger was busy: nothing was taken, nothing recorded.
func TestPostgresAWaitThatNeverReachedTheDatabaseSaysSo(t *testing.T) {
	c := pgtest.Private(t)
	if err := c.CreateDatabase("away"); err != nil {
		t.Fatal(err)
	}
	l := fixture.OpenPostgres(t, c.SocketURL("away"))
	if err := c.Down(pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	_, err := lease.Wait(context.Background(), l, ledger.AcquireRequest{Lock: "x", Identity: ledger.Identity{Actor: "t", PID: os.Getpid()},
		TTL: 30 * time.Second}, 300*time.Millisecond, nil)
	var unrecorded *lease.UnrecordedError
	if !errors.As(err, &unrecorded) || unrecorded.Held != nil || !ledger.IsUnreachable(err) {
		t.Fatalf("a wait with the database down: %v, want an UnrecordedError of the database out of reach", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "ledger unreachable: ") {
		t.Fatalf("a wait with the database down says %q, want it to say the ledger is unreachable", msg)
	}
	if err := c.Up(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pgtestDB(t, c, "away").QueryRow(`SELECT count(*) FROM events WHERE lock_name = 'x'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d events of a wait that never reached the database", n)
	}
}

// pgtestDB is a pool of the test's own on database name of c.
func pgtestDB(t *testing.T, c *pgtest.Cluster, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", c.SocketURL(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
