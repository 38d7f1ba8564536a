package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
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

// holdWriter holds l's writer mutex (its in-process half) until the
// returned function is called, or the test ends.
func holdWriter(t *testing.T, l *Ledger) (let func()) {
	l.mu.Lock()
	let = sync.OnceFunc(l.mu.Unlock)
	t.Cleanup(let)
	return let
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
// mutex are made in one transaction: one clock read, one commit.
func TestGroupCommitsQueuedDecisionsTogether(t *testing.T) {
	onBothStores(t, func(t *testing.T, open func() *Ledger) {
		l := open()
		ctx := context.Background()
		const n = 8
		let := holdWriter(t, l)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = l.TryAcquire(ctx, AcquireRequest{Lock: fmt.Sprintf("g-%d", i), Identity: Identity{Actor: "group-test"}})
			})
		}
		awaitQueued(t, l, n)
		let()
		wg.Wait()
		at := map[string]bool{}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("acquire g-%d: %v", i, errs[i])
			}
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
		let := holdWriter(t, l)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				lock := fmt.Sprintf("f-%d", i)
				errs[i] = l.write(ctx, lock, func(w *writeTx) (error, error) {
					p := events.JobProcessesPayload{JobRequestID: "req_group_job", PIDs: []int{1}, Action: "left_running", Note: "group test"}
					if _, err := w.append(events.JobProcesses, Identity{RequestID: "req_group_" + lock, Actor: "group-test"}, &p); err != nil {
						return nil, err
					}
					if i == n/2 {
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
			if i == n/2 {
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
