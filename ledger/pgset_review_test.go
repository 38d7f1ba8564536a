package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/store"
)

var errReview = errors.New("review: the decision fails")

// groupOf makes one decision on each lock prefix-i through fns[i], queued
// in that order behind l's held writer mutex so that they are made as one
// group in that order, and returns each caller's error and how many times
// each fn ran.
func groupOf(t *testing.T, l *Ledger, ctxs []context.Context, prefix string, fns []func(w *writeTx) error) ([]error, []int64) {
	t.Helper()
	let := holdWriter(t, l)
	var wg sync.WaitGroup
	errs := make([]error, len(fns))
	runs := make([]atomic.Int64, len(fns))
	for i, fn := range fns {
		ctx := context.Background()
		if ctxs != nil {
			ctx = ctxs[i]
		}
		wg.Go(func() {
			errs[i] = l.write(ctx, fmt.Sprintf("%s-%d", prefix, i), func(w *writeTx) (error, error) {
				runs[i].Add(1)
				return nil, fn(w)
			})
		})
		awaitQueued(t, l, i+1)
	}
	let()
	wg.Wait()
	counts := make([]int64, len(fns))
	for i := range runs {
		counts[i] = runs[i].Load()
	}
	return errs, counts
}

// statement sends one statement in w's transaction (the kept writes go
// before it).
func statement(w *writeTx) error {
	_, err := store.LoadRows(w.ctx, w.q)
	return err
}

// committedIffAnswered fails the test unless each lock prefix-i has an
// event exactly when its caller was answered with success, and at most one.
func committedIffAnswered(t *testing.T, l *Ledger, prefix string, errs []error) {
	t.Helper()
	for i, err := range errs {
		lock := fmt.Sprintf("%s-%d", prefix, i)
		n := len(lockEvents(t, l, lock))
		if n > 1 || (n == 1) != (err == nil) {
			t.Errorf("%s: %d events stored, caller answered %v", lock, n, err)
		}
	}
}

// The lazy savepoints: a decision that sent a statement and then fails
// undoes its own writes alone; one that fails before any statement, after
// an earlier one took its savepoint, rolls nothing back of it; one whose own
// write the database refuses at its own statement fails alone, the group
// not made again. The chain and the Merkle rows are those of the standing
// decisions made one at a time: contiguous, and verify passes (with a
// checkpoint signed after each group too).
func TestPostgresGroupLazySavepoints(t *testing.T) {
	for _, how := range []string{"direct", "bounced", "signed"} {
		t.Run(how, func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			opts := []Option{WithDatabase(url), Unsigned(), WithPoolSize(8)}
			var key note.Verifier
			switch how {
			case "bounced":
				url = pgtest.NewBouncedDatabase(t)
				opts[0] = WithDatabase(url)
			case "signed":
				s, v := testKey(t)
				opts[1], key = WithSigner(s), v
				opts = append(opts, WithCheckpointPolicy(1, time.Hour))
			}
			ctx := context.Background()
			l, err := Open(ctx, t.TempDir(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			db := pgtest.Open(t, url)
			allow := beforeInsert(t, db, "events", "z-6", refuseRow)
			fns := []func(w *writeTx) error{
				// z-0: kept, sends nothing.
				func(w *writeTx) error { return jobEvent(w, "req_z0") },
				// z-1: sends z-0's writes and its own, then fails.
				func(w *writeTx) error {
					if err := jobEvent(w, "req_z1"); err != nil {
						return err
					}
					if err := statement(w); err != nil {
						return err
					}
					return errReview
				},
				// z-2: takes its savepoint, sends its write and stands.
				func(w *writeTx) error {
					if err := statement(w); err != nil {
						return err
					}
					if err := jobEvent(w, "req_z2"); err != nil {
						return err
					}
					return statement(w)
				},
				// z-3: fails before any statement.
				func(w *writeTx) error {
					if err := jobEvent(w, "req_z3"); err != nil {
						return err
					}
					return errReview
				},
				// z-4: sends one write, keeps another, fails.
				func(w *writeTx) error {
					if err := jobEvent(w, "req_z4a"); err != nil {
						return err
					}
					if err := statement(w); err != nil {
						return err
					}
					if err := jobEvent(w, "req_z4b"); err != nil {
						return err
					}
					return errReview
				},
				// z-5: stands, kept.
				func(w *writeTx) error { return jobEvent(w, "req_z5") },
				// z-6: its own write refused at its own statement.
				func(w *writeTx) error {
					if err := jobEvent(w, "req_z6"); err != nil {
						return err
					}
					return statement(w)
				},
				// z-7: stands after the refused one.
				func(w *writeTx) error {
					if err := statement(w); err != nil {
						return err
					}
					return jobEvent(w, "req_z7")
				},
			}
			first, _, err := store.Head(ctx, l.store, l.genesis)
			if err != nil {
				t.Fatal(err)
			}
			errs, runs := groupOf(t, l, nil, "z", fns)
			stand := map[int]bool{0: true, 2: true, 5: true, 7: true}
			for i, err := range errs {
				switch {
				case stand[i] && err != nil:
					t.Errorf("z-%d: %v", i, err)
				case i == 6:
					var pe *pgconn.PgError
					if !errors.As(err, &pe) || pe.Code != "42501" {
						t.Errorf("z-6: %v, want the database's refusal", err)
					}
				case !stand[i] && !errors.Is(err, errReview):
					t.Errorf("z-%d: %v, want its own failure", i, err)
				}
				if runs[i] != 1 {
					t.Errorf("z-%d: made %d times, want once (no remake)", i, runs[i])
				}
			}
			committedIffAnswered(t, l, "z", errs)
			var seqs []int64
			for _, i := range []int{0, 2, 5, 7} {
				for _, ev := range lockEvents(t, l, fmt.Sprintf("z-%d", i)) {
					seqs = append(seqs, ev.Seq)
				}
			}
			for k, s := range seqs {
				if s != first+int64(k)+1 {
					t.Errorf("standing decisions' events at seqs %v, want %d.. in the group's order", seqs, first+1)
					break
				}
			}
			if key != nil {
				head := first + int64(len(seqs))
				if got := storedCheckpoints(t, l, key); len(got) == 0 || got[len(got)-1] != head {
					t.Errorf("checkpoints %v, want the last one at the group's head %d", got, head)
				}
			}
			allow()
			verifyOK(t, l)
		})
	}
}

// backendPID is the PostgreSQL backend of w's transaction.
func backendPID(t *testing.T, w *writeTx) int {
	var pid int
	if err := w.q.QueryRowContext(w.ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Error(err)
	}
	return pid
}

// terminate ends backend pid from db and awaits its end.
func terminate(t *testing.T, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, pid int) {
	ctx := context.Background()
	var ok bool
	if err := db.QueryRowContext(ctx, `SELECT pg_terminate_backend($1, 30000)`, pid).Scan(&ok); err != nil || !ok {
		t.Errorf("terminate backend %d: %v, %v", pid, ok, err)
	}
}

// A group whose connection is cut (its backend terminated) before its one
// write, found by that write or by a later decision's statement: no
// decision reports a write that did not commit, and each, made again alone
// on a new connection, is recorded once.
func TestPostgresGroupBackendTerminatedBeforeItsWrite(t *testing.T) {
	for _, c := range []struct {
		at      string
		bounced bool
	}{{"flush", false}, {"statement", false}, {"savepoint", false}, {"own", false},
		{"flush", true}, {"statement", true}, {"savepoint", true}, {"own", true}} {
		at := c.at
		t.Run(fmt.Sprintf("%s/bounced=%v", at, c.bounced), func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			if c.bounced {
				url = pgtest.NewBouncedDatabase(t)
			}
			l := openGroupPG(t, url)
			db := pgtest.Open(t, url)
			var pid int
			var cut sync.Once
			// at: the cut is found by the group's write (flush), by a
			// later decision's statement sending the kept writes
			// (statement), nothing kept, by its savepoint (savepoint), or
			// by a decision's statement sending its own writes after its
			// savepoint, and its rollback to it (own).
			fns := []func(w *writeTx) error{
				func(w *writeTx) error {
					pid = backendPID(t, w)
					if err := jobEvent(w, "req_c0"); err != nil || at != "savepoint" {
						return err
					}
					return statement(w)
				},
				func(w *writeTx) error {
					switch at {
					case "savepoint":
						cut.Do(func() { terminate(t, db, pid) })
						if err := statement(w); err != nil {
							return err
						}
					case "own":
						if err := statement(w); err != nil {
							return err
						}
						if err := jobEvent(w, "req_c1"); err != nil {
							return err
						}
						cut.Do(func() { terminate(t, db, pid) })
						return statement(w)
					}
					return jobEvent(w, "req_c1")
				},
				func(w *writeTx) error {
					cut.Do(func() { terminate(t, db, pid) })
					if at == "statement" {
						if err := statement(w); err != nil {
							return err
						}
					}
					return jobEvent(w, "req_c2")
				},
				func(w *writeTx) error { return jobEvent(w, "req_c3") },
			}
			cutAt := map[string]int{"flush": 4, "statement": 2, "savepoint": 1, "own": 1}[at]
			errs, runs := groupOf(t, l, nil, "c", fns)
			for i, err := range errs {
				if err != nil {
					t.Errorf("c-%d: %v", i, err)
				}
				want := int64(2) // in the group, then alone
				if i > cutAt {
					want = 1 // alone only: the group stopped where it found the cut
				}
				if runs[i] != want {
					t.Errorf("c-%d: made %d times, want %d", i, runs[i], want)
				}
			}
			committedIffAnswered(t, l, "c", errs)
			verifyOK(t, l)
		})
	}
}

// A group whose connection is cut while the database runs its one write:
// each decision is made again alone, and recorded once.
func TestPostgresGroupBackendTerminatedDuringItsWrite(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l := openGroupPG(t, url)
	db := pgtest.Open(t, url)
	for _, q := range []string{`CREATE TABLE review_armed (armed boolean)`, `INSERT INTO review_armed VALUES (true)`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	allow := beforeInsert(t, db, "events", "d-2", `IF (SELECT armed FROM review_armed) THEN PERFORM pg_sleep(60); END IF;`)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for {
			var pid int
			err := db.QueryRowContext(ctx, `SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%lockledger_write_decision%'`).Scan(&pid)
			if errors.Is(err, sql.ErrNoRows) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := db.ExecContext(ctx, `UPDATE review_armed SET armed = false`); err != nil {
				t.Error(err)
			}
			terminate(t, db, pid)
			return
		}
	})
	fns := make([]func(w *writeTx) error, 4)
	for i := range fns {
		fns[i] = func(w *writeTx) error { return jobEvent(w, fmt.Sprintf("req_d%d", i)) }
	}
	errs, runs := groupOf(t, l, nil, "d", fns)
	wg.Wait()
	allow()
	for i, err := range errs {
		if err != nil {
			t.Errorf("d-%d: %v", i, err)
		}
		if runs[i] != 2 {
			t.Errorf("d-%d: made %d times, want twice (in the group, then alone)", i, runs[i])
		}
	}
	committedIffAnswered(t, l, "d", errs)
	verifyOK(t, l)
}

// Every caller of a group gone between its decisions and its one write:
// no caller is told of a write that did not commit, and nothing is
// recorded twice.
func TestPostgresGroupEveryCallerGoneBeforeItsWrite(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l := openGroupPG(t, url)
	const n = 4
	ctxs := make([]context.Context, n)
	cancels := make([]context.CancelFunc, n)
	for i := range ctxs {
		ctxs[i], cancels[i] = context.WithCancel(ctx)
		defer cancels[i]()
	}
	fns := make([]func(w *writeTx) error, n)
	for i := range fns {
		fns[i] = func(w *writeTx) error {
			if i == n-1 {
				for _, c := range cancels {
					c()
				}
				<-w.ctx.Done() // the group's context, once every caller is gone
			}
			return jobEvent(w, fmt.Sprintf("req_g%d", i))
		}
	}
	errs, _ := groupOf(t, l, ctxs, "g", fns)
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("g-%d: %v, want its caller's cancel", i, err)
		}
	}
	committedIffAnswered(t, l, "g", errs)
	verifyOK(t, l)
}

// refuseOnce is beforeInsert's body that refuses the first row it meets
// as refuseRow does, and lets every later one through (sequence
// review_once counts them).
const refuseOnce = `IF nextval('review_once') = 1 THEN RAISE EXCEPTION 'once' USING ERRCODE = 'insufficient_privilege'; END IF;`

// An acquire whose group's write the database refuses once (another
// member's row) is made again alone: its caller's request id, one
// lock_acquired.
func TestPostgresGroupRefusedAcquireRecordedOnce(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l := openGroupPG(t, url)
	db := pgtest.Open(t, url)
	if _, err := db.ExecContext(ctx, `CREATE SEQUENCE review_once`); err != nil {
		t.Fatal(err)
	}
	allow := beforeInsert(t, db, "locks", "o-2", refuseOnce)
	const n = 4
	let := holdWriter(t, l)
	var wg sync.WaitGroup
	got := make([]*Acquisition, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = l.TryAcquire(ctx, AcquireRequest{Lock: fmt.Sprintf("o-%d", i), Identity: Identity{Actor: "review"}})
		})
		awaitQueued(t, l, i+1)
	}
	let()
	wg.Wait()
	for i := range n {
		lock := fmt.Sprintf("o-%d", i)
		if errs[i] != nil {
			t.Errorf("%s: %v", lock, errs[i])
			continue
		}
		evs := queryStrings(t, db, `SELECT type || ' ' || request_id FROM events WHERE lock_name = $1 ORDER BY seq`, lock)
		if want := "lock_acquired " + got[i].RequestID; len(evs) != 1 || evs[0] != want {
			t.Errorf("%s: events %q, want [%s]", lock, evs, want)
		}
	}
	var calls int64
	if err := db.QueryRowContext(ctx, `SELECT last_value FROM review_once`).Scan(&calls); err != nil || calls != 2 {
		t.Errorf("o-2's row inserted %d times (%v), want refused once, then once alone", calls, err)
	}
	allow()
	verifyOK(t, l)
}

// A caller gone while its decision is made in a group whose write the
// database then refuses: its decision, made again alone for a caller that
// is gone, is not made and says so; the others are made alone once each.
func TestPostgresGroupRefusedAfterACallerWentMidGroup(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l := openGroupPG(t, url)
	db := pgtest.Open(t, url)
	if _, err := db.ExecContext(ctx, `CREATE SEQUENCE review_once`); err != nil {
		t.Fatal(err)
	}
	allow := beforeInsert(t, db, "events", "m-3", refuseOnce)
	const n = 4
	ctxs := make([]context.Context, n)
	var cancel context.CancelFunc
	for i := range ctxs {
		ctxs[i] = ctx
	}
	ctxs[1], cancel = context.WithCancel(ctx)
	defer cancel()
	fns := make([]func(w *writeTx) error, n)
	for i := range fns {
		fns[i] = func(w *writeTx) error {
			if i == 1 {
				cancel()
			}
			return jobEvent(w, fmt.Sprintf("req_m%d", i))
		}
	}
	errs, runs := groupOf(t, l, ctxs, "m", fns)
	for i, err := range errs {
		switch {
		case i == 1 && !errors.Is(err, context.Canceled):
			t.Errorf("m-1: %v, want its caller's cancel", err)
		case i != 1 && err != nil:
			t.Errorf("m-%d: %v", i, err)
		}
		want := int64(2) // in the group, then alone
		if i == 1 {
			want = 1 // in the group only: alone, its caller is gone
		}
		if runs[i] != want {
			t.Errorf("m-%d: made %d times, want %d", i, runs[i], want)
		}
	}
	committedIffAnswered(t, l, "m", errs)
	allow()
	verifyOK(t, l)
}

// A decision that reads other locks of its group through other store
// functions than LoadDecision (a shared holder's row, an exclusive
// holder's, a queue that an earlier decision joined, every holder) reads
// what the decisions before it kept, not the group's read.
func TestPostgresGroupReadsOfOtherLocksSeeTheGroupsWrites(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l := openGroupPG(t, url)
	pid := os.Getpid()
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "rx-b", Identity: Identity{RequestID: "req_rx_holder", Actor: "review", PID: pid}}); err != nil {
		t.Fatal(err)
	}
	reqs := []AcquireRequest{
		{Lock: "rx-sh", Shared: true, Identity: Identity{RequestID: "req_rx_sh", Actor: "review", PID: pid}},
		{Lock: "rx-ex", Identity: Identity{RequestID: "req_rx_ex", Actor: "review", PID: pid}},
		{Lock: "rx-b", Waiting: true, WaitLeft: time.Minute, Identity: Identity{RequestID: "req_rx_waiter", Actor: "review", PID: pid}},
	}
	let := holdWriter(t, l)
	var wg sync.WaitGroup
	errs := make([]error, len(reqs)+1)
	for i, r := range reqs {
		wg.Go(func() { _, errs[i] = l.TryAcquire(ctx, r) })
		awaitQueued(t, l, i+1)
	}
	var shared []*store.HolderRow
	var row *store.Row
	var queue []Waiter
	var all []*store.HolderRow
	wg.Go(func() {
		errs[len(reqs)] = l.write(ctx, "rx-reader", func(w *writeTx) (error, error) {
			var err error
			if shared, err = store.LoadShared(w.ctx, w.q, "rx-sh"); err != nil {
				return nil, err
			}
			if row, err = store.LoadRow(w.ctx, w.q, "rx-ex"); err != nil {
				return nil, err
			}
			qs, err := l.queues(w.ctx, w.q, "rx-b", w.now)
			if err != nil {
				return nil, err
			}
			queue = qs["rx-b"]
			if all, err = store.LoadAllHolders(w.ctx, w.q); err != nil {
				return nil, err
			}
			return nil, errReview
		})
	})
	awaitQueued(t, l, len(reqs)+1)
	let()
	wg.Wait()
	var held *HeldError
	if errs[0] != nil || errs[1] != nil || !errors.As(errs[2], &held) || !errors.Is(errs[3], errReview) {
		t.Fatalf("errors %v", errs)
	}
	if len(shared) != 1 || shared[0].RequestID != "req_rx_sh" {
		t.Errorf("rx-sh's shared holders read in the group: %+v, want req_rx_sh", shared)
	}
	if row == nil || !row.Held || row.RequestID != "req_rx_ex" {
		t.Errorf("rx-ex's row read in the group: %+v, want held by req_rx_ex", row)
	}
	if len(queue) != 1 || queue[0].RequestID != "req_rx_waiter" {
		t.Errorf("rx-b's queue read in the group: %+v, want req_rx_waiter", queue)
	}
	var names []string
	for _, h := range all {
		names = append(names, h.Name+" "+h.RequestID)
	}
	if want := "[rx-b req_rx_holder rx-ex req_rx_ex rx-sh req_rx_sh]"; fmt.Sprint(names) != want {
		t.Errorf("every holder read in the group: %v, want %s", names, want)
	}
	verifyOK(t, l)
}

// A group whose connection is cut while its one read (the clock's, with
// every lock's rows) waits: no decision is made, each caller is told, and
// nothing is recorded; made again, each is recorded once.
func TestPostgresGroupBackendTerminatedDuringItsRead(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	l := openGroupPG(t, url)
	db := pgtest.Open(t, url)
	// The group's read waits behind this table lock until it is cut.
	blocker, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := blocker.ExecContext(ctx, `LOCK TABLE locks IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for {
			var pid int
			err := db.QueryRowContext(ctx, `SELECT pid FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE '%clock_timestamp()%lockledger_read_decision%'`).Scan(&pid)
			if errors.Is(err, sql.ErrNoRows) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			terminate(t, db, pid)
			if err := blocker.Rollback(); err != nil {
				t.Error(err)
			}
			return
		}
	})
	fns := make([]func(w *writeTx) error, 4)
	for i := range fns {
		fns[i] = func(w *writeTx) error { return jobEvent(w, fmt.Sprintf("req_e%d", i)) }
	}
	errs, runs := groupOf(t, l, nil, "e", fns)
	wg.Wait()
	for i, err := range errs {
		if err == nil || runs[i] != 0 {
			t.Errorf("e-%d: %v, made %d times; want an error, and not made", i, err, runs[i])
		}
		if n := len(lockEvents(t, l, fmt.Sprintf("e-%d", i))); n != 0 {
			t.Errorf("e-%d: %d events stored, want none", i, n)
		}
	}
	errs, runs = groupOf(t, l, nil, "e", fns)
	for i, err := range errs {
		if err != nil || runs[i] != 1 {
			t.Errorf("e-%d made again: %v, made %d times", i, err, runs[i])
		}
	}
	committedIffAnswered(t, l, "e", errs)
	verifyOK(t, l)
}
