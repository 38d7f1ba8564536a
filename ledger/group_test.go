package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/store"
)

// onBothStores runs body on a new SQLite ledger and a new PostgreSQL one.
func onBothStores(t *testing.T, body func(t *testing.T, open func() *Ledger)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			var opts []Option
			if kind == "postgres" {
				opts = append(opts, WithDatabase(pgtest.NewDatabase(t)))
			}
			root := t.TempDir()
			body(t, func() *Ledger {
				l, err := Open(context.Background(), root, append(opts, Unsigned(), WithPoolSize(8))...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				return l
			})
		})
	}
}

// openGroupPG opens a ledger on PostgreSQL database url with a pool
// large enough for a group's callers, closed when the test ends.
func openGroupPG(t *testing.T, url string) *Ledger {
	t.Helper()
	l, err := Open(context.Background(), t.TempDir(), WithDatabase(url), Unsigned(), WithPoolSize(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// holdWriter holds l's writer mutex (its in-process half) until the
// returned function is called, or the test ends.
func holdWriter(t *testing.T, l *Ledger) (let func()) {
	l.mu.Lock()
	let = sync.OnceFunc(l.mu.Unlock)
	t.Cleanup(let)
	return let
}

// acquireGrouped acquires locks prefix-0 .. prefix-(n-1), each on its own
// goroutine, queued behind l's held writer mutex so that they are made as
// one group, and fails the test unless every one was acquired.
func acquireGrouped(t *testing.T, l *Ledger, prefix string, n int) {
	t.Helper()
	let := holdWriter(t, l)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = l.TryAcquire(context.Background(), AcquireRequest{Lock: fmt.Sprintf("%s-%d", prefix, i), Identity: Identity{Actor: "group-test"}})
		})
	}
	awaitQueued(t, l, n)
	let()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("acquire %s-%d: %v", prefix, i, err)
		}
	}
}

// awaitQueued awaits n decisions waiting in l's queue.
func awaitQueued(t *testing.T, l *Ledger, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.writes.mu.Lock()
		got := len(l.writes.waiting)
		l.writes.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d decisions queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// verifyOK checks the whole ledger: chain, Merkle rows, projection.
func verifyOK(t *testing.T, l *Ledger) {
	t.Helper()
	rep, err := l.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("verify: %+v", rep.Problems)
	}
}

// onlyRefused fails the test unless the decision on lock prefix-refused
// failed with the database's refusal and left no event, and each other
// decision on prefix-i succeeded with one event.
func onlyRefused(t *testing.T, l *Ledger, prefix string, errs []error, refused int) {
	t.Helper()
	for i, err := range errs {
		lock := fmt.Sprintf("%s-%d", prefix, i)
		want := 1
		if i == refused {
			want = 0
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Errorf("%s: %v, want the database's refusal", lock, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", lock, err)
		}
		if got := len(lockEvents(t, l, lock)); got != want {
			t.Errorf("%s: %d events stored, want %d", lock, got, want)
		}
	}
}

// lockEvents are the events of lock name, in seq order.
func lockEvents(t *testing.T, l *Ledger, name string) []*store.EventRow {
	t.Helper()
	var evs []*store.EventRow
	for ev, err := range store.Events(context.Background(), l.store, store.Filter{Lock: name}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// Decisions on distinct locks that queue while another holds the writer

// beforeInsert runs body, PL/pgSQL statements, before every insert into
// table of a row of lock (what a role without a grant, or a stalled
// server, puts in a group's way), until drop removes it.
func beforeInsert(t *testing.T, db *sql.DB, table, lock, body string) (drop func()) {
	t.Helper()
	name := "before_insert_" + strings.ReplaceAll(lock, "-", "_")
	for _, q := range []string{
		fmt.Sprintf(`CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN %s RETURN NEW; END $$`, name, body),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT ON %s FOR EACH ROW WHEN (NEW.lock_name = '%s') EXECUTE FUNCTION %s()`, name, table, lock, name),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		t.Helper()
		if _, err := db.Exec(fmt.Sprintf(`DROP TRIGGER %s ON %s`, name, table)); err != nil {
			t.Fatal(err)
		}
	}
}

// refuseRow is beforeInsert's body that refuses the row as a missing
// grant does (SQLSTATE 42501).
const refuseRow = `RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'insufficient_privilege';`

// mutex are made in one transaction: one clock read, one commit.
func TestGroupCommitsQueuedDecisionsTogether(t *testing.T) {
	onBothStores(t, func(t *testing.T, open func() *Ledger) {
		l := open()
		const n = 8
		acquireGrouped(t, l, "g", n)
		at := map[string]bool{}
		for i := range n {
			evs := lockEvents(t, l, fmt.Sprintf("g-%d", i))
			if len(evs) != 1 {
				t.Fatalf("g-%d: %d events, want 1", i, len(evs))
			}
			var env struct {
				At string `json:"at"`
			}
			if err := json.Unmarshal(evs[0].Body, &env); err != nil || env.At == "" {
				t.Fatalf("g-%d: the event's at: %v", i, err)
			}
			at[env.At] = true
		}
		// The first waits for the writer mutex alone; those queued behind
		// it go in the next transaction, together.
		if len(at) > 2 {
			t.Errorf("%d queued decisions were made at %d instants, want one group (at most 2 instants)", n, len(at))
		}
		verifyOK(t, l)
	})
}

// A decision of a group that fails after it appended rolls back to its
// savepoint: its event is not stored, and the others' decisions stand, in
// one contiguous chain.
func TestGroupFailingDecisionLeavesTheOthers(t *testing.T) {
	onBothStores(t, func(t *testing.T, open func() *Ledger) {
		l := open()
		ctx := context.Background()
		boom := errors.New("boom")
		const n = 6
		// Two fail: the decisions after each chain from the head before it.
		fails := func(i int) bool { return i == 1 || i == n/2+1 }
		let := holdWriter(t, l)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				lock := fmt.Sprintf("f-%d", i)
				errs[i] = l.write(ctx, lock, func(w *writeTx) (error, error) {
					if err := jobEvent(w, "req_group_"+lock); err != nil {
						return nil, err
					}
					if fails(i) {
						return nil, boom
					}
					return nil, nil
				})
			})
		}
		awaitQueued(t, l, n)
		let()
		wg.Wait()
		for i := range n {
			want := 1
			if fails(i) {
				want = 0
				if !errors.Is(errs[i], boom) {
					t.Errorf("f-%d: %v, want boom", i, errs[i])
				}
			} else if errs[i] != nil {
				t.Errorf("f-%d: %v", i, errs[i])
			}
			if got := len(lockEvents(t, l, fmt.Sprintf("f-%d", i))); got != want {
				t.Errorf("f-%d: %d events stored, want %d", i, got, want)
			}
		}
		verifyOK(t, l)
	})
}

// A decision that fails after appending more events than each one after
// it appends takes its events and Merkle rows back with its savepoint: the
// decisions after it chain from the head before it, and their Merkle rows
// (hashed from the rows the group read and wrote in memory) are those of
// the same events appended one at a time.
func TestGroupFailedDecisionsAppendsAreNotReused(t *testing.T) {
	onBothStores(t, func(t *testing.T, open func() *Ledger) {
		l := open()
		ctx := context.Background()
		boom := errors.New("boom")
		let := holdWriter(t, l)
		var wg sync.WaitGroup
		const n = 5
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				lock := fmt.Sprintf("m-%d", i)
				errs[i] = l.write(ctx, lock, func(w *writeTx) (error, error) {
					appends := 1
					if i == 1 {
						appends = 3
					}
					for range appends {
						if err := jobEvent(w, "req_group_"+lock); err != nil {
							return nil, err
						}
					}
					if i == 1 {
						return nil, boom
					}
					return nil, nil
				})
			})
			awaitQueued(t, l, i+1) // queued, and so made, in this order
		}
		let()
		wg.Wait()
		for i := range n {
			if i == 1 {
				if !errors.Is(errs[i], boom) {
					t.Errorf("m-%d: %v, want boom", i, errs[i])
				}
			} else if errs[i] != nil {
				t.Errorf("m-%d: %v", i, errs[i])
			}
		}
		verifyOK(t, l)
	})
}

// A group tells the waiters of every lock it changed, each by a
// notification whose payload is its lock's name, though it sends them
// in one statement.
func TestPostgresGroupNotifiesEveryLock(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l := openGroupPG(t, url)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN lockledger"); err != nil {
		t.Fatal(err)
	}
	const n = 5
	acquireGrouped(t, l, "n", n)
	want := map[string]bool{}
	for i := range n {
		want[fmt.Sprintf("n-%d", i)] = true
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(want) > 0 {
		nt, err := conn.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("locks never notified: %v (%v)", slices.Sorted(maps.Keys(want)), err)
		}
		if nt.Channel != "lockledger" {
			t.Fatalf("a notification on channel %q", nt.Channel)
		}
		delete(want, nt.Payload)
	}
}

// A write of no lock's rows through the decision calls (a verify's record,
// appended with statements of its own) still notifies the followers
// of the log, with no lock's name, though it has nothing kept for the
// group's write call to carry the notification.
func TestPostgresWriteOfNoLockNotifies(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l, err := Open(ctx, t.TempDir(), WithDatabase(url), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN lockledger"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordAccess(ctx, events.LedgerVerified, Identity{}, &events.Verified{Result: events.AuditOK}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nt, err := conn.WaitForNotification(wctx)
	if err != nil || nt.Payload != "" {
		t.Fatalf("the verify's notification: %+v, %v; want one with no lock's name", nt, err)
	}
}

// A group's one write that the database refuses for one lock's row (here
// a trigger, as a role without a grant would) undoes the whole group: each
// decision is made again alone, the refused one fails with the database's
// error and leaves nothing, and the others commit. The notifications ride
// in the write: those of the refused group go with it, and each decision
// made again alone that commits notifies its lock once more.
func TestPostgresGroupRefusedWriteFailsOnlyItsDecision(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l := openGroupPG(t, url)
	db := pgtest.Open(t, url)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN lockledger"); err != nil {
		t.Fatal(err)
	}
	allow := beforeInsert(t, db, "locks", "r-2", refuseRow)
	const n = 5
	let := holdWriter(t, l)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = l.TryAcquire(ctx, AcquireRequest{Lock: fmt.Sprintf("r-%d", i), Identity: Identity{Actor: "group-test"}})
		})
	}
	awaitQueued(t, l, n)
	let()
	wg.Wait()
	onlyRefused(t, l, "r", errs, 2)
	for i := range n {
		lock := fmt.Sprintf("r-%d", i)
		st, err := l.Status(ctx, lock)
		if err != nil || (st.Holder != nil) != (i != 2) {
			t.Errorf("%s: status %+v, %v; held: want %v", lock, st, err, i != 2)
		}
	}
	// Every notification up to a last one of the test's own, sent after
	// the decisions' commits.
	if _, err := db.ExecContext(ctx, `SELECT pg_notify('lockledger', 'end of the test')`); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	heard := map[string]int{}
	for {
		nt, err := conn.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("the test's notification never came: %v (heard %v)", err, heard)
		}
		if nt.Payload == "end of the test" {
			break
		}
		heard[nt.Payload]++
	}
	for i := range n {
		lock := fmt.Sprintf("r-%d", i)
		if want := map[bool]int{true: 0, false: 1}[i == 2]; heard[lock] != want {
			t.Errorf("%s: notified %d times, want %d (heard %v)", lock, heard[lock], want, heard)
		}
	}
	allow()
	verifyOK(t, l)
}

// The group's kept writes refused when a later decision's statement
// sends them: that decision's statement fails in the aborted transaction,
// and it, the ones before it and the ones not made yet are each made
// again alone; only the refused one fails.
func TestPostgresGroupRefusedWriteBeforeALaterStatement(t *testing.T) {
	url := pgtest.NewDatabase(t)
	l := openGroupPG(t, url)
	db := pgtest.Open(t, url)
	allow := beforeInsert(t, db, "events", "q-2", refuseRow)
	fns := make([]func(w *writeTx) error, 5)
	for i := range fns {
		fns[i] = func(w *writeTx) error {
			if i == 3 {
				if err := statement(w); err != nil {
					return err
				}
			}
			return jobEvent(w, fmt.Sprintf("req_group_q-%d", i))
		}
	}
	errs, _ := groupOf(t, l, nil, "q", fns)
	onlyRefused(t, l, "q", errs, 2)
	allow()
	verifyOK(t, l)
}

// A client whose context ends while its decision waits in the queue
// leaves it at once, with its context's error, and nothing is written for
// it; the others are made.
func TestGroupCancelledWhileQueued(t *testing.T) {
	onBothStores(t, func(t *testing.T, open func() *Ledger) {
		l := open()
		ctx := context.Background()
		let := holdWriter(t, l)
		var wg sync.WaitGroup
		var first, kept error
		wg.Go(func() {
			_, first = l.TryAcquire(ctx, AcquireRequest{Lock: "c-first", Identity: Identity{Actor: "group-test"}})
		})
		awaitQueued(t, l, 1)
		wg.Go(func() {
			_, kept = l.TryAcquire(ctx, AcquireRequest{Lock: "c-kept", Identity: Identity{Actor: "group-test"}})
		})
		cctx, cancel := context.WithCancel(ctx)
		cancelled := make(chan error, 1)
		go func() {
			_, err := l.TryAcquire(cctx, AcquireRequest{Lock: "c-gone", Identity: Identity{Actor: "group-test"}})
			cancelled <- err
		}()
		awaitQueued(t, l, 3)
		cancel()
		select {
		case err := <-cancelled:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled while queued: %v, want context.Canceled", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a cancelled client stayed queued behind the writer mutex")
		}
		let()
		wg.Wait()
		if first != nil || kept != nil {
			t.Fatalf("the others: %v, %v", first, kept)
		}
		if evs := lockEvents(t, l, "c-gone"); len(evs) != 0 {
			t.Errorf("%d events of the cancelled decision stored", len(evs))
		}
		verifyOK(t, l)
	})
}

// Many clients of one ledger cycling on distinct locks at once: every
// cycle succeeds, each lock's tokens go up, and the ledger verifies.
func TestGroupManyClientsOnDistinctLocks(t *testing.T) {
	onBothStores(t, func(t *testing.T, open func() *Ledger) {
		l := open()
		ctx := context.Background()
		const clients, cycles = 16, 5
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := range clients {
			wg.Go(func() {
				lock := fmt.Sprintf("m-%d", i)
				var last int64
				for range cycles {
					a, err := l.TryAcquire(ctx, AcquireRequest{Lock: lock, Identity: Identity{Actor: "group-test"}})
					if err != nil {
						errs <- err
						return
					}
					if a.FencingToken <= last {
						errs <- fmt.Errorf("%s: token %d after %d", lock, a.FencingToken, last)
						return
					}
					last = a.FencingToken
					if _, err := l.Release(ctx, ReleaseRequest{Lock: lock, Identity: Identity{RequestID: a.RequestID, Actor: "group-test"}}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		n, err := store.CountEvents(ctx, l.store)
		if err != nil {
			t.Fatal(err)
		}
		if n < 2*clients*cycles {
			t.Errorf("%d events, want at least %d", n, 2*clients*cycles)
		}
		verifyOK(t, l)
	})
}

// On PostgreSQL a group waits for the writer row in the database (a lock
// wait bounded by lock_timeout); a client whose context ends while it
// waits there gets its context's error at once, and nothing is written
// for it.
func TestPostgresCancelledWhileQueuedInTheDatabase(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	open := func(host string) *Ledger {
		l, err := Open(ctx, t.TempDir(), WithDatabase(url), WithBusyTimeout(time.Minute), WithHost(Host{ID: host}), Unsigned())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	holder, waiter := open("host-holder"), open("host-waiter")
	tx, err := holder.beginWrite(ctx) // holds the writer row
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.TryAcquire(cctx, AcquireRequest{Lock: "db-wait", Identity: Identity{Actor: "group-test"}})
		done <- err
	}()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter never waited for the writer row in the database")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an acquire cancelled while waiting for the writer row succeeded")
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("the cancelled acquire returned after %s", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an acquire cancelled while waiting for the writer row did not return (busy timeout 1m)")
	}
	tx.Rollback()
	if evs := lockEvents(t, waiter, "db-wait"); len(evs) != 0 {
		t.Errorf("%d events of the cancelled acquire stored", len(evs))
	}
	if _, err := waiter.TryAcquire(ctx, AcquireRequest{Lock: "db-wait", Identity: Identity{Actor: "group-test"}}); err != nil {
		t.Fatalf("the next acquire after a cancelled one: %v", err)
	}
}

// openSQLite opens a new SQLite ledger for a test of the writer queue.
func openSQLite(t *testing.T, opts ...Option) *Ledger {
	t.Helper()
	l, err := Open(context.Background(), t.TempDir(), append(opts, Unsigned())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// queuedAs reports, awaiting it, whether a decision on lock waits in l's
// queue (it returns false after a generous deadline).
func queuedAs(l *Ledger, lock string) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		l.writes.mu.Lock()
		in := slices.ContainsFunc(l.writes.waiting, func(d *pendingWrite) bool { return d.name == lock })
		l.writes.mu.Unlock()
		if in {
			return true
		}
	}
	return false
}

// inGroup runs the decisions all as one group: the first is queued
// behind the held writer mutex, the others behind it in order, and the
// mutex let go (after queued, if any) once all are queued. Each runs on a
// goroutine of its own; a panic there is recovered and returned as its
// value.
func inGroup(t *testing.T, l *Ledger, queued func(), all ...func() error) (errs []error, panics []any) {
	t.Helper()
	let := holdWriter(t, l)
	errs, panics = make([]error, len(all)), make([]any, len(all))
	var wg sync.WaitGroup
	for i, f := range all {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = f()
		})
		awaitQueued(t, l, i+1)
	}
	if queued != nil {
		queued()
	}
	let()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("a decision of the group never returned")
	}
	return errs, panics
}

// breakGroup is a decision that ends the group's transaction under the
// others' feet, as a commit that fails would: every decision of the group
// is rolled back. It calls first before.
func breakGroup(l *Ledger, first func()) func() error {
	return func() error {
		return l.write(context.Background(), "breaker", func(w *writeTx) (error, error) {
			first()
			return nil, w.tx.Rollback()
		})
	}
}

// A heartbeat that rewrites its holder's --file target is never grouped:
// a group that rolls back would leave the live holder's file rewritten or
// gone until the heartbeat is made again, which a caller gone meanwhile
// never does. Made alone, its target holds what the ledger says.
func TestGroupNeverHoldsAHeartbeatThatRewritesATarget(t *testing.T) {
	l := openSQLite(t, WithClock(testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)).Stepping(time.Second).Now))
	ctx := context.Background()
	ext := filepath.Join(t.TempDir(), "deploy.lock")
	id := Identity{RequestID: "req-hb", Actor: "group-test", PID: os.Getpid()}
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "hb", TTL: time.Hour, Identity: id,
		Targets: []events.Target{{Format: "tower-fleet", Path: ext}}}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(ext)
	if err != nil {
		t.Fatal(err)
	}
	hctx, gone := context.WithCancel(ctx)
	defer gone()
	errs, _ := inGroup(t, l, nil, func() error { _, err := l.Heartbeat(hctx, "hb", id); return err }, breakGroup(l, gone))
	if errs[0] != nil && !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("heartbeat: %v", errs[0])
	}
	after, err := os.ReadFile(ext)
	if err != nil {
		t.Fatalf("the target after the heartbeat: %v", err)
	}
	if errs[0] == nil && bytes.Equal(after, before) {
		t.Error("the heartbeat did not renew the target")
	}
	verifyOK(t, l)
}

// A forced take-over of another tool's unreadable --file target is never
// grouped: its bytes are kept aside, whatever the others in the queue do.
func TestGroupNeverHoldsATakeOverOfAnUnreadableTarget(t *testing.T) {
	l := openSQLite(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), ".sprint-running")
	corrupt := []byte("pid: {{{\nstarted_at: never\n")
	if err := os.WriteFile(path, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}
	errs, _ := inGroup(t, l, nil, func() error {
		_, err := l.TryAcquire(ctx, AcquireRequest{Lock: "sprint", Force: true,
			Identity: Identity{RequestID: "sprint-1", Actor: "group-test", PID: os.Getpid()},
			Targets:  []events.Target{{Format: "bso", Path: path}}})
		return err
	}, breakGroup(l, func() {}))
	if errs[0] != nil {
		t.Fatalf("forced acquire: %v", errs[0])
	}
	asides, _ := filepath.Glob(path + ".corrupt-*")
	if len(asides) != 1 {
		t.Fatalf("kept aside: %v, want one file", asides)
	}
	if got, _ := os.ReadFile(asides[0]); !bytes.Equal(got, corrupt) {
		t.Fatalf("the file kept aside holds %q, want the unreadable bytes", got)
	}
	verifyOK(t, l)
}

// hookedClock is a stepping test clock that runs a hook, once, at the
// first reading after it is armed: the reading is taken before the hook
// runs, and every reading the hook makes is later.
type hookedClock struct {
	c    *testclock.Clock
	hook atomic.Pointer[func()]
}

func (h *hookedClock) Now() time.Time {
	now := h.c.Now()
	if f := h.hook.Swap(nil); f != nil {
		(*f)()
	}
	return now
}

func (h *hookedClock) arm(f func()) { h.hook.Store(&f) }

// eventAt is the time the only event of lock was dated at.
func eventAt(t *testing.T, l *Ledger, lock string) time.Time {
	t.Helper()
	evs := lockEvents(t, l, lock)
	if len(evs) != 1 {
		t.Fatalf("%s: %d events, want 1", lock, len(evs))
	}
	var env struct {
		At time.Time `json:"at"`
	}
	if err := json.Unmarshal(evs[0].Body, &env); err != nil {
		t.Fatal(err)
	}
	return env.At
}

// A group's decisions are dated once the group is taken: none is dated
// before its caller asked (a lease's expiry is reckoned from the decision).
func TestGroupDatesNoDecisionBeforeItWasAsked(t *testing.T) {
	clock := &hookedClock{c: testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)).Stepping(time.Second)}
	l := openSQLite(t, WithClock(clock.Now))
	ctx := context.Background()
	acquire := func(lock string) error {
		_, err := l.TryAcquire(ctx, AcquireRequest{Lock: lock, Identity: Identity{Actor: "group-test"}})
		return err
	}
	let := holdWriter(t, l)
	var wg sync.WaitGroup
	var first, late error
	wg.Go(func() { first = acquire("d-first") })
	awaitQueued(t, l, 1)
	var asked time.Time
	clock.arm(func() {
		// The group's clock is being read: a decision asked for now.
		asked = clock.c.Now()
		wg.Go(func() { late = acquire("d-late") })
		if !queuedAs(l, "d-late") {
			t.Error("the late decision never queued")
		}
	})
	let()
	wg.Wait()
	if first != nil || late != nil {
		t.Fatalf("acquires: %v, %v", first, late)
	}
	if at := eventAt(t, l, "d-late"); at.Before(asked) {
		t.Errorf("a decision asked for at %s was dated %s", asked, at)
	}
	verifyOK(t, l)
}

// A leader whose caller is gone once it holds the writer mutex and the
// transaction fails no one else: the others' decisions are made.
func TestGroupLeaderGoneBeforeTakeFailsNoOne(t *testing.T) {
	clock := &hookedClock{c: testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)).Stepping(time.Second)}
	l := openSQLite(t, WithClock(clock.Now))
	ctx := context.Background()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	acquire := func(ctx context.Context, lock string) func() error {
		return func() error {
			_, err := l.TryAcquire(ctx, AcquireRequest{Lock: lock, Identity: Identity{Actor: "group-test"}})
			return err
		}
	}
	// Armed once all are queued: the next reading of the clock is the
	// group's, and the leader's caller leaves then. The pause lets what
	// the cancel starts on other goroutines run before the group goes on
	// (the test passes without it; it only makes a leader's cancel that
	// reached the group likelier to be seen).
	gone := func() {
		cancel()
		time.Sleep(20 * time.Millisecond)
	}
	got, _ := inGroup(t, l, func() { clock.arm(gone) }, acquire(lctx, "leader"), acquire(ctx, "live-1"), acquire(ctx, "live-2"))
	if got[0] != nil && !errors.Is(got[0], context.Canceled) {
		t.Errorf("the leader gone: %v", got[0])
	}
	for i, err := range got[1:] {
		if err != nil {
			t.Errorf("live-%d: %v", i+1, err)
		}
	}
	verifyOK(t, l)
}

// A decision that panics in a group fails alone: the panic is its caller's
// (raised on its goroutine), the others' decisions are made, and the
// writer mutex and the queue are free for the next.
func TestGroupPanicIsItsCallersAlone(t *testing.T) {
	onBothStores(t, func(t *testing.T, open func() *Ledger) {
		l := open()
		ctx := context.Background()
		acquire := func(lock string) func() error {
			return func() error {
				_, err := l.TryAcquire(ctx, AcquireRequest{Lock: lock, Identity: Identity{Actor: "group-test"}})
				return err
			}
		}
		errs, panics := inGroup(t, l, nil, acquire("p-first"), func() error {
			return l.write(ctx, "p-boom", func(w *writeTx) (error, error) {
				if err := jobEvent(w, "req_group_boom"); err != nil {
					return nil, err
				}
				panic("boom")
			})
		}, acquire("p-after"))
		if panics[1] != "boom" {
			t.Errorf("the panicking decision's caller got %v, want boom", panics[1])
		}
		if panics[0] != nil || panics[2] != nil || errs[0] != nil || errs[2] != nil {
			t.Fatalf("the others: panics %v, %v; errors %v, %v", panics[0], panics[2], errs[0], errs[2])
		}
		if evs := lockEvents(t, l, "p-boom"); len(evs) != 0 {
			t.Errorf("%d events of the decision that panicked stored", len(evs))
		}
		if err := acquire("p-next")(); err != nil {
			t.Fatalf("the next decision: %v", err)
		}
		verifyOK(t, l)
	})
}
