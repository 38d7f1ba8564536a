package lease

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// TestWaitersLeaveTheWriterMutexAlone: while a lock has an active holder,
// a waiter's attempts after the first are answered from the row and the
// file, without the writer mutex, so waiters cannot starve the holder's
// release. The test holds the writer mutex itself all along: the waiter
// still sees the holder on every attempt in between.
func TestWaitersLeaveTheWriterMutexAlone(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	holder, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	held := func(rid string) ledger.AcquireRequest {
		return ledger.AcquireRequest{Lock: "x", Identity: ledger.Identity{RequestID: rid, Actor: "t", PID: os.Getpid()}, TTL: 100 * time.Second}
	}
	if _, err := holder.TryAcquire(ctx, held("holder")); err != nil {
		t.Fatal(err)
	}
	waiter, err := ledger.Open(ctx, root, ledger.WithBusyTimeout(20*time.Millisecond), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	f, err := os.OpenFile(filepath.Join(root, ledger.WriterMux), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int32
	_, err = Wait(ctx, waiter, held("waiter"), 600*time.Millisecond, func(h *ledger.HeldError, _ time.Duration) {
		if h.Holder.RequestID == "holder" {
			seen.Add(1)
		}
	})
	var unrecorded *UnrecordedError
	if !ledger.IsTransient(err) || !errors.As(err, &unrecorded) || unrecorded.Held == nil || unrecorded.Held.Holder.RequestID != "holder" {
		t.Fatalf("last attempt with the writer mutex taken: %v, want an UnrecordedError of the holder's refusal and a transient (busy) error", err)
	}
	if seen.Load() < 2 {
		t.Fatalf("the waiter saw the holder on %d attempts, want every attempt between the first and the last", seen.Load())
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	var he *ledger.HeldError
	if _, err := Wait(ctx, waiter, held("waiter"), 100*time.Millisecond, nil); !errors.As(err, &he) {
		t.Fatalf("with the writer mutex free: %v, want HeldError", err)
	}
}

// onceLive is a cancelled context whose first Err says it is not: the
// caller's signal lands between Wait's look at ctx and its attempt.
type onceLive struct {
	context.Context
	looked atomic.Bool
}

func (c *onceLive) Err() error {
	if !c.looked.Swap(true) {
		return nil
	}
	return c.Context.Err()
}

// A wait cancelled in the middle of an attempt (SIGINT while it renews
// its place or peeks) still records its acquire_blocked, as one cancelled
// between attempts does: the record is made by the last attempt, on a
// context of its own.
func TestAWaitCancelledMidAttemptIsRecorded(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, t.TempDir(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	req := func(rid string) ledger.AcquireRequest {
		return ledger.AcquireRequest{Lock: "x", Identity: ledger.Identity{RequestID: rid, Actor: "t", PID: os.Getpid()}, TTL: 100 * time.Second}
	}
	if _, err := l.TryAcquire(ctx, req("holder")); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var held *ledger.HeldError
	if _, err := Wait(&onceLive{Context: cancelled}, l, req("waiter"), time.Minute, nil); !errors.As(err, &held) {
		t.Fatalf("a wait cancelled mid-attempt: %v, want the HeldError its last attempt records", err)
	}
	var n int
	if err := pgtest.Open(t, l.Source()).QueryRowContext(ctx, `SELECT count(*) FROM events WHERE type = 'acquire_blocked' AND json_extract(body, '$.request_id') = 'waiter'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d acquire_blocked of the waiter, want 1", n)
	}
}

// A caller that does not wait, whose one attempt finds the writer kept
// past the busy timeout, is refused by the lock's holder as a waiter's end
// is (exit 3), when the lock read without the writer shows one, and told
// that nothing was recorded; on a free lock it gets the busy error itself.
func TestACallerThatDoesNotWaitOnABusyWriterIsRefusedByTheHolder(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			busy := ledger.WithBusyTimeout(300 * time.Millisecond)
			var holder, caller *ledger.Ledger
			if engine == "postgres" {
				url := pgtest.NewDatabase(t)
				holder = fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "holder-host"}))
				caller = fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "caller-host"}), busy)
			} else {
				root := t.TempDir()
				holder, caller = fixture.Open(t, root), fixture.Open(t, root, busy)
			}
			req := func(lock, rid string) ledger.AcquireRequest {
				return ledger.AcquireRequest{Lock: lock, Identity: ledger.Identity{RequestID: rid, Actor: "t", PID: os.Getpid()}, TTL: 100 * time.Second}
			}
			if _, err := holder.TryAcquire(ctx, req("x", "holder")); err != nil {
				t.Fatal(err)
			}
			release := keepWriter(t, holder, engine == "postgres")
			defer release()
			_, err := Wait(ctx, caller, req("x", "nowait"), 0, nil)
			var unrecorded *UnrecordedError
			if !errors.As(err, &unrecorded) || unrecorded.Held == nil || unrecorded.Held.Holder.RequestID != "holder" ||
				!errors.Is(err, ledger.ErrHeld) || !ledger.IsTransient(err) {
				t.Fatalf("no wait on a held lock with the writer kept: %v, want an UnrecordedError of the holder's refusal and the busy error", err)
			}
			_, err = Wait(ctx, caller, req("free", "nowait-free"), 0, nil)
			if errors.As(err, &unrecorded) || errors.Is(err, ledger.ErrHeld) || !ledger.IsTransient(err) {
				t.Fatalf("no wait on a free lock with the writer kept: %v, want the busy error alone", err)
			}
			release()
			var n int
			if err := pgtest.Open(t, caller.Source()).QueryRowContext(ctx, `SELECT count(*) FROM events WHERE type = 'acquire_blocked'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d acquire_blocked recorded with the writer kept, want none", n)
			}
		})
	}
}

// keepWriter keeps the writer of l's ledger from every other writer until
// the returned func is called: the root's writer mutex on SQLite, the
// writer_lock row on PostgreSQL (in a transaction of another host).
func keepWriter(t *testing.T, l *ledger.Ledger, postgres bool) func() {
	t.Helper()
	if postgres {
		tx, err := pgtest.Open(t, l.Source()).Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`SELECT id FROM writer_lock FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		return func() { _ = tx.Rollback() }
	}
	f, err := os.OpenFile(filepath.Join(l.Root(), ledger.WriterMux), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// A wait ends at its end plus GiveUpFor however long another writer keeps
// the ledger's writer, on either engine: an attempt before the last is cut
// at the wait's end (not the busy timeout later), and the last, which
// would record acquire_blocked, after GiveUpFor. Nothing is recorded
// then, and the UnrecordedError carries the last refusal seen, or, none
// seen, the holder the lock read without the writer shows.
func TestAWaitEndsAtItsEndWhileAnotherKeepsTheWriter(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			var holder, waiter *ledger.Ledger
			if engine == "postgres" {
				url := pgtest.NewDatabase(t)
				holder = fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "holder-host"}))
				waiter = fixture.OpenPostgres(t, url, ledger.WithHost(ledger.Host{ID: "waiter-host"}))
			} else {
				root := t.TempDir()
				holder, waiter = fixture.Open(t, root), fixture.Open(t, root)
			}
			req := func(lock, rid string) ledger.AcquireRequest {
				return ledger.AcquireRequest{Lock: lock, Identity: ledger.Identity{RequestID: rid, Actor: "t", PID: os.Getpid()}, TTL: 100 * time.Second}
			}
			if _, err := holder.TryAcquire(ctx, req("x", "holder")); err != nil {
				t.Fatal(err)
			}
			blocked := func(rid string) int {
				var n int
				if err := pgtest.Open(t, waiter.Source()).QueryRowContext(ctx, `SELECT count(*) FROM events WHERE type = 'acquire_blocked' AND request_id = $1`, rid).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			const wait = 300 * time.Millisecond
			// Far below one busy timeout past the wait, or two: what an
			// attempt left to wait for the writer would take.
			within := waiter.BusyTimeout() / 2

			t.Run("kept from the start", func(t *testing.T) {
				release := keepWriter(t, holder, engine == "postgres")
				defer release()
				start := time.Now()
				_, err := Wait(ctx, waiter, req("y", "early"), wait, nil)
				took := time.Since(start)
				var unrecorded *UnrecordedError
				if !errors.As(err, &unrecorded) || unrecorded.Held != nil || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ledger.ErrHeld) {
					t.Fatalf("a wait that never got the writer: %v, want an UnrecordedError with no refusal", err)
				}
				if took > within {
					t.Errorf("the wait of %s returned after %s, want within %s", wait, took, within)
				}
				release()
				if n := blocked("early"); n != 0 {
					t.Errorf("%d acquire_blocked of a wait that never got the writer, want none", n)
				}
			})

			// No attempt got the writer, but the lock read without it shows
			// its holder: the holder's refusal, as if an attempt had seen it.
			t.Run("kept from the start, on a held lock", func(t *testing.T) {
				release := keepWriter(t, holder, engine == "postgres")
				defer release()
				start := time.Now()
				_, err := Wait(ctx, waiter, req("x", "early-held"), wait, nil)
				took := time.Since(start)
				var unrecorded *UnrecordedError
				if !errors.As(err, &unrecorded) || unrecorded.Held == nil || unrecorded.Held.Holder.RequestID != "holder" ||
					!errors.Is(err, ledger.ErrHeld) || unrecorded.Held.Waited < wait {
					t.Fatalf("a wait on a held lock that never got the writer: %v, want an UnrecordedError of the holder's refusal, waited %s at least", err, wait)
				}
				if took > within {
					t.Errorf("the wait of %s returned after %s, want within %s", wait, took, within)
				}
				release()
				if n := blocked("early-held"); n != 0 {
					t.Errorf("%d acquire_blocked of a wait that never got the writer, want none", n)
				}
			})

			// Long enough for the first attempt, which the writer's keeping
			// waits for, to be refused before the wait ends on a loaded
			// machine: one cut short would keep nothing.
			const longer = 2 * time.Second
			t.Run("kept once waiting", func(t *testing.T) {
				var release func()
				defer func() {
					if release != nil {
						release()
					}
				}()
				start := time.Now()
				_, err := Wait(ctx, waiter, req("x", "late"), longer, func(*ledger.HeldError, time.Duration) {
					if release == nil {
						release = keepWriter(t, holder, engine == "postgres")
					}
				})
				took := time.Since(start)
				if release == nil {
					t.Fatalf("no attempt of the wait was refused before it ended: %v", err)
				}
				var unrecorded *UnrecordedError
				if !errors.As(err, &unrecorded) || unrecorded.Held == nil || unrecorded.Held.Holder.RequestID != "holder" ||
					!errors.Is(err, ledger.ErrHeld) || unrecorded.Held.Waited < longer {
					t.Fatalf("a wait whose last attempt did not get the writer: %v, want an UnrecordedError of the holder's refusal, waited %s at least", err, longer)
				}
				if took > longer+within {
					t.Errorf("the wait of %s returned after %s, want within %s", longer, took, longer+within)
				}
				release()
				// The first attempt joined the queue; the last recorded nothing.
				if n := blocked("late"); n != 1 {
					t.Errorf("%d acquire_blocked of the wait, want 1 (its first attempt's)", n)
				}
				// With the writer free, the same wait records its end.
				var held *ledger.HeldError
				if _, err := Wait(ctx, waiter, req("x", "late"), wait, nil); !errors.As(err, &held) || errors.As(err, &unrecorded) {
					t.Fatalf("with the writer free: %v, want the HeldError alone", err)
				}
				if n := blocked("late"); n < 2 {
					t.Errorf("%d acquire_blocked of the waits, want its end recorded", n)
				}
			})
		})
	}
}
