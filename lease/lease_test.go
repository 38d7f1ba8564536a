package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/internal/testlog"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// awaitEvent polls the ledger until an event matching ok exists.
func awaitEvent(t *testing.T, l *ledger.Ledger, typ events.Type, within time.Duration, ok func(p any) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rows, err := pgtest.Open(t, l.Source()).Query(`SELECT body FROM events WHERE type = $1 ORDER BY seq`, string(typ))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var body []byte
			if err := rows.Scan(&body); err != nil {
				t.Fatal(err)
			}
			if _, p, err := events.Decode(body); err == nil && ok(p) {
				rows.Close()
				return
			}
		}
		rows.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no matching %s within %s", typ, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdWriter takes the ledger's writer mutex from outside, as another
// process would, so that every write fails as busy until release.
func holdWriter(t *testing.T, l *ledger.Ledger) (release func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(l.Root(), ledger.WriterMux), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// awaitTimers returns once n timers wait on clock: a lease's heartbeat
// and its deadline each wait on one between two heartbeats.
func awaitTimers(t *testing.T, clock *testclock.Clock, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); clock.Timers() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers on the clock, want %d", clock.Timers(), n)
		}
	}
}

// count is how many events of type typ the ledger holds.
func count(t *testing.T, db *sql.DB, typ events.Type) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE type = $1`, string(typ)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// leaseOnClock acquires lock with the heartbeat every interval of clock.
func leaseOnClock(t *testing.T, l *ledger.Ledger, clock *testclock.Clock, interval time.Duration) *lease.Lease {
	t.Helper()
	s, err := lease.Acquire(context.Background(), l, ledger.AcquireRequest{Lock: "svc", TTL: 5 * time.Second},
		lease.WithHeartbeatInterval(interval), lease.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every interval on the lease's clock is one heartbeat, and once released
// the lease waits on nothing and writes nothing, however far the clock moves.
func TestLeaseHeartbeatsUntilRelease(t *testing.T) {
	ctx := context.Background()
	l := fixture.Open(t, "")
	clock := testclock.New(time.Now())
	const interval = 50 * time.Millisecond
	s := leaseOnClock(t, l, clock, interval)
	db := pgtest.Open(t, l.Source())
	for i := 1; i <= 3; i++ {
		awaitTimers(t, clock, 2)
		clock.Add(interval)
		for deadline := time.Now().Add(10 * time.Second); count(t, db, events.LockHeartbeat) != i; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d heartbeats after the clock moved %d intervals", count(t, db, events.LockHeartbeat), i)
			}
		}
	}
	code := 0
	if err := s.Release(ctx, lease.Result{Result: events.ResultSuccess, ExitCode: &code}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, lease.Result{}); err != nil {
		t.Fatalf("second Release: %v, want nil", err)
	}
	select {
	case <-s.Lost():
		t.Fatal("a released lease reports lost")
	default:
	}
	if n := clock.Timers(); n != 0 {
		t.Fatalf("%d timers still wait on the clock after Release", n)
	}
	var after int
	db.QueryRow(`SELECT count(*) FROM events`).Scan(&after)
	clock.Add(10 * interval)
	var later int
	db.QueryRow(`SELECT count(*) FROM events`).Scan(&later)
	if later != after {
		t.Fatalf("events written after Release: %d", later-after)
	}
}

func TestLeaseBusyLedgerIsNotALoss(t *testing.T) {
	ctx := context.Background()
	l := fixture.Open(t, "", ledger.WithBusyTimeout(20*time.Millisecond))
	clock := testclock.New(time.Now())
	const interval = 50 * time.Millisecond
	s := leaseOnClock(t, l, clock, interval)
	defer s.Release(ctx, lease.Result{})
	// Every interval on the clock is one attempt, refused as busy while
	// the writer is held; the one after its release records the failures.
	release := holdWriter(t, l)
	for range lease.HeartbeatFailuresBeforeEvent {
		awaitTimers(t, clock, 2)
		clock.Add(interval)
	}
	awaitTimers(t, clock, 2)
	release()
	clock.Add(interval)
	awaitEvent(t, l, events.HeartbeatFailed, 10*time.Second, func(p any) bool {
		hf := p.(*events.HeartbeatFailedPayload)
		return hf.ConsecutiveFailures == lease.HeartbeatFailuresBeforeEvent && !hf.LockLost
	})
	before := 0
	awaitEvent(t, l, events.LockHeartbeat, 10*time.Second, func(any) bool { before++; return true })
	if s.Err() != nil {
		t.Fatalf("lease lost over a busy ledger: %v", s.Err())
	}
}

// heartbeatAt is the ledger's heartbeat time for lock (its clock is
// time.Now, the wall clock this process reads too).
func heartbeatAt(t *testing.T, l *ledger.Ledger, lock string) time.Time {
	t.Helper()
	var s string
	if err := pgtest.Open(t, l.Source()).QueryRow(`SELECT heartbeat_at FROM lock_holders WHERE lock_name = $1 AND exclusive = 1`, lock).Scan(&s); err != nil {
		t.Fatal(err)
	}
	at, err := events.ParseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// awaitLost returns when the lease was lost, and the time it saw that.
func awaitLost(t *testing.T, s *lease.Lease) time.Time {
	t.Helper()
	select {
	case <-s.Lost():
		return time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("lease not lost though no heartbeat gets through")
	}
	return time.Time{}
}

// checkLostAtDeadline checks that the lease gave up at its local deadline
// (not earlier) and while the ledger still counted it as the holder.
func checkLostAtDeadline(t *testing.T, l *ledger.Ledger, s *lease.Lease, lostAt time.Time, ttl time.Duration) *lease.DeadlineError {
	t.Helper()
	var de *lease.DeadlineError
	if !errors.As(s.Err(), &de) || !errors.Is(s.Err(), ledger.ErrLost) {
		t.Fatalf("Err() = %v, want a *DeadlineError wrapping ErrLost", s.Err())
	}
	hb := heartbeatAt(t, l, s.Lock())
	if de.LastOK.After(hb) {
		t.Fatalf("deadline counted from %s, after the ledger's heartbeat time %s: it would end after the TTL", de.LastOK, hb)
	}
	if expires := hb.Add(ttl); !lostAt.Before(expires) {
		t.Fatalf("lost at %s, not before the lock's TTL ran out (%s) by the ledger's heartbeat time", lostAt, expires)
	}
	if since := lostAt.Sub(de.LastOK); since < ttl-de.Margin {
		t.Fatalf("lost %s after the last successful heartbeat was sent, before its deadline (ttl %s − margin %s)", since, ttl, de.Margin)
	}
	return de
}

// A heartbeat call that never answers (the writer mutex is held elsewhere
// and the busy timeout outlasts the TTL, as a database behind a cut network
// would) does not keep the holder from learning that it lost the lock: at
// its local deadline, while the ledger still counts it as the holder.
func TestLeaseLostAtLocalDeadlineWhileHeartbeatHangs(t *testing.T) {
	ctx := context.Background()
	l := fixture.Open(t, "", ledger.WithBusyTimeout(time.Minute))
	ttl := 2 * time.Second
	s, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "svc", TTL: ttl}, lease.WithHeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// Count from a heartbeat, not from the acquire.
	awaitEvent(t, l, events.LockHeartbeat, 10*time.Second, func(any) bool { return true })
	release := holdWriter(t, l)
	defer release()
	lostAt := awaitLost(t, s)
	de := checkLostAtDeadline(t, l, s, lostAt, ttl)
	if de.Failures != 0 || de.LastErr != nil || de.Margin != lease.DefaultLossMargin(ttl) {
		t.Fatalf("deadline error %+v: want the hung call (no failure returned) and the default margin", de)
	}
	// The ledger cannot be reached: Release says the lock was lost, at once.
	if err := s.Release(ctx, lease.Result{Result: events.ResultCancelled}); !errors.As(err, &de) {
		t.Fatalf("Release after the deadline: %v, want the *lease.DeadlineError", err)
	}
}

// Heartbeats that fail (busy past a short busy timeout) lose the lock at
// the same deadline; the loss is recorded once the ledger answers, and
// Release reports the loss even though it frees the lock.
func TestLeaseLostWhenNoHeartbeatSucceedsBeforeTheDeadline(t *testing.T) {
	ctx := context.Background()
	l := fixture.Open(t, "", ledger.WithBusyTimeout(20*time.Millisecond))
	ttl := 6 * time.Second
	// The local deadline, a second and a half after the last heartbeat,
	// leaves room for heartbeats that fail busy even where a loaded machine
	// slows each one; the wide margin gives the loss seconds to be recorded
	// once the writer mutex is freed.
	s, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "svc", TTL: ttl}, lease.WithHeartbeatInterval(100*time.Millisecond), lease.WithLossMargin(4500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, l)
	lostAt := awaitLost(t, s)
	release()
	de := checkLostAtDeadline(t, l, s, lostAt, ttl)
	if de.Failures == 0 || !ledger.IsTransient(de.LastErr) {
		t.Fatalf("deadline error %+v: want the busy failures", de)
	}
	awaitEvent(t, l, events.HeartbeatFailed, 10*time.Second, func(p any) bool { return p.(*events.HeartbeatFailedPayload).LockLost })
	if err := s.Release(ctx, lease.Result{Result: events.ResultCancelled}); !errors.Is(err, ledger.ErrLost) {
		t.Fatalf("Release after the deadline: %v, want ledger.ErrLost", err)
	}
	awaitEvent(t, l, events.LockReleased, time.Second, func(any) bool { return true })
}

func TestLeaseLossMarginIsChecked(t *testing.T) {
	l := fixture.Open(t, "")
	for _, c := range []struct {
		name string
		ttl  time.Duration
		opts []lease.Option
	}{
		{"zero", 0, []lease.Option{lease.WithLossMargin(0)}},
		{"negative", 0, []lease.Option{lease.WithLossMargin(-time.Second)}},
		{"the ttl", 3 * time.Second, []lease.Option{lease.WithLossMargin(3 * time.Second)}},
		{"no room for a heartbeat", 3 * time.Second, []lease.Option{lease.WithHeartbeatInterval(time.Second), lease.WithLossMargin(2 * time.Second)}},
	} {
		if _, err := lease.Acquire(context.Background(), l, ledger.AcquireRequest{Lock: "m", TTL: c.ttl}, c.opts...); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
}

func TestLeaseLostToAnotherHolder(t *testing.T) {
	ctx := context.Background()
	l := fixture.Open(t, "")
	s, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "svc", TTL: 3 * time.Second}, lease.WithHeartbeatInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "svc", TTL: time.Minute}, Active: true, Note: "test"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not lost after a steal")
	}
	var nh *ledger.NotHolderError
	if !errors.As(s.Err(), &nh) || nh.Holder == nil || !errors.Is(s.Err(), ledger.ErrLost) {
		t.Fatalf("Err() = %v, want *NotHolderError naming the new holder", s.Err())
	}
	if err := s.Release(ctx, lease.Result{}); !errors.Is(err, ledger.ErrLost) {
		t.Fatalf("Release of a stolen lease: %v, want ErrLost", err)
	}
}

func TestLeaseWaitsForRelease(t *testing.T) {
	ctx := context.Background()
	l := fixture.Open(t, "")
	// Between attempts a waiter sleeps an hour unless woken: only the
	// release's wake-up, or the renewal of its place in the queue after
	// ledger.WaiterRenewEvery, can give it the lock in this test.
	lease.SetWaitBackoff(t, time.Hour)
	first, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "q", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "q"}, lease.WithWait(100*time.Millisecond))
	var held *ledger.HeldError
	if !errors.As(err, &held) || held.Holder.RequestID != first.RequestID() || held.Waited < 100*time.Millisecond {
		t.Fatalf("waiting on a held lock: %v", err)
	}
	type waited struct {
		s   *lease.Lease
		err error
	}
	done := make(chan waited, 1)
	blocked := make(chan time.Time, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := lease.Acquire(wctx, l, ledger.AcquireRequest{Lock: "q"}, lease.WithWaitObserver(func(*ledger.HeldError, time.Duration) {
			select {
			case blocked <- time.Now():
			default:
			}
		}))
		done <- waited{s, err}
	}()
	queued := <-blocked
	if err := first.Release(ctx, lease.Result{}); err != nil {
		t.Fatal(err)
	}
	w := <-done
	if w.err != nil {
		t.Fatal(w.err)
	}
	second := w.s
	defer second.Release(ctx, lease.Result{})
	if took := time.Since(queued); took >= ledger.WaiterRenewEvery {
		t.Fatalf("the waiter got the lock %s after it blocked: by its renewal, not woken by the release", took)
	}
	if second.FencingToken() <= first.FencingToken() {
		t.Fatalf("fencing token %d after %d", second.FencingToken(), first.FencingToken())
	}
}

// A caller that does not wait (wait 0) is refused by its first attempt,
// which has waited nothing: its acquire_blocked says 0, however long the
// request id and the set-up before the attempt took.
func TestARefusalWithoutWaitingWaitedNothing(t *testing.T) {
	ctx := context.Background()
	l := fixture.Open(t, "")
	req := func(rid string) ledger.AcquireRequest {
		return ledger.AcquireRequest{Lock: "x", Identity: ledger.Identity{RequestID: rid, Actor: "t", PID: os.Getpid()}, TTL: 100 * time.Second}
	}
	if _, err := l.TryAcquire(ctx, req("holder")); err != nil {
		t.Fatal(err)
	}
	_, err := lease.Wait(ctx, l, req(""), 0, nil)
	var held *ledger.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("a held lock, no wait: %v", err)
	}
	if held.Waited != 0 {
		t.Errorf("refused at once, reported as waited %v", held.Waited)
	}
	_, err = lease.Wait(ctx, l, req(""), 50*time.Millisecond, nil)
	if !errors.As(err, &held) || held.Waited < 50*time.Millisecond {
		t.Errorf("after waiting 50ms: %v, waited %v", err, held.Waited)
	}
}

// Done is closed once the lease is gone: released (Err nil) or lost (Err
// says why), and not before.
func TestLeaseDoneWhenReleasedOrLost(t *testing.T) {
	ctx := context.Background()
	l := fixture.Open(t, "")
	released, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "rel", TTL: 3 * time.Second}, lease.WithHeartbeatInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-released.Done():
		t.Fatal("Done closed while the lease is held")
	default:
	}
	if err := released.Release(ctx, lease.Result{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released.Done():
	default:
		t.Fatal("Done not closed after Release")
	}
	if released.Err() != nil {
		t.Fatalf("Err() after a release of a held lease: %v, want nil", released.Err())
	}

	stolen, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "lost", TTL: 3 * time.Second}, lease.WithHeartbeatInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer stolen.Release(ctx, lease.Result{})
	if _, err := l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "lost", TTL: time.Minute}, Active: true, Note: "test"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stolen.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after a steal")
	}
	if !errors.Is(stolen.Err(), ledger.ErrLost) {
		t.Fatalf("Err() after a steal: %v, want ErrLost", stolen.Err())
	}
}

// A loss at the deadline that the ledger could not take (its writer held
// elsewhere past the moment the lease lets go) is recorded by RecordLoss
// once the ledger answers again; Release still returns at once.
func TestLeaseLossIsRecordedWhenTheLedgerAnswersAgain(t *testing.T) {
	ctx := context.Background()
	var log testlog.Buffer
	l := fixture.Open(t, "", ledger.WithBusyTimeout(20*time.Millisecond), ledger.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	s, err := lease.Acquire(ctx, l, ledger.AcquireRequest{Lock: "svc", TTL: 2 * time.Second}, lease.WithHeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, l)
	awaitLost(t, s)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "could not record the lost lock"); {
		if time.Now().After(deadline) {
			t.Fatal("the lease did not give up recording its loss while the writer was held")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var de *lease.DeadlineError
	if err := s.Release(ctx, lease.Result{Result: events.ResultCancelled}); !errors.As(err, &de) {
		t.Fatalf("Release after the deadline: %v, want the *lease.DeadlineError", err)
	}
	if s.UnrecordedLoss() == nil {
		t.Fatal("UnrecordedLoss is nil while the ledger could not record the loss")
	}
	recorded := make(chan error, 1)
	go func() { recorded <- s.RecordLoss(ctx) }()
	select {
	case err := <-recorded:
		t.Fatalf("RecordLoss returned while the writer was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	select {
	case err := <-recorded:
		if err != nil {
			t.Fatalf("RecordLoss once the ledger answered: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RecordLoss did not return once the ledger answered")
	}
	awaitEvent(t, l, events.HeartbeatFailed, time.Second, func(p any) bool { return p.(*events.HeartbeatFailedPayload).LockLost })
	if s.UnrecordedLoss() != nil || s.RecordLoss(ctx) != nil {
		t.Fatal("the loss is recorded: nothing should be left to record")
	}
}
