package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
)

func openReal(t *testing.T, opts ...Option) *Ledger {
	t.Helper()
	l, err := Open(context.Background(), t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// awaitEvent polls the ledger until an event matching ok exists.
func awaitEvent(t *testing.T, l *Ledger, typ events.Type, within time.Duration, ok func(p any) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rows, err := l.DB().Query(`SELECT body FROM events WHERE type = ? ORDER BY seq`, string(typ))
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
func holdWriter(t *testing.T, l *Ledger) (release func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(l.Root(), WriterMux), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

func TestLeaseHeartbeatsUntilRelease(t *testing.T) {
	ctx := context.Background()
	l := openReal(t)
	lease, err := l.Acquire(ctx, "svc", WithTTL(3*time.Second), WithHeartbeatInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	awaitEvent(t, l, events.LockHeartbeat, 10*time.Second, func(any) bool { n++; return n >= 3 })
	code := 0
	if err := lease.Release(ctx, Result{Result: events.ResultSuccess, ExitCode: &code}); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx, Result{}); err != nil {
		t.Fatalf("second Release: %v, want nil", err)
	}
	select {
	case <-lease.Lost():
		t.Fatal("a released lease reports lost")
	default:
	}
	var after int
	l.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&after)
	time.Sleep(150 * time.Millisecond) // three intervals: a heartbeat goroutine still running would write
	var later int
	l.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&later)
	if later != after {
		t.Fatalf("events written after Release: %d", later-after)
	}
}

func TestLeaseBusyLedgerIsNotALoss(t *testing.T) {
	ctx := context.Background()
	l := openReal(t, WithBusyTimeout(20*time.Millisecond))
	lease, err := l.Acquire(ctx, "svc", WithTTL(5*time.Second), WithHeartbeatInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx, Result{})
	release := holdWriter(t, l)
	time.Sleep(time.Second) // the writer stays busy through several heartbeat attempts
	release()
	awaitEvent(t, l, events.HeartbeatFailed, 10*time.Second, func(p any) bool {
		hf := p.(*events.HeartbeatFailedPayload)
		return hf.ConsecutiveFailures == HeartbeatFailuresBeforeEvent && !hf.LockLost
	})
	before := 0
	awaitEvent(t, l, events.LockHeartbeat, 10*time.Second, func(any) bool { before++; return true })
	if lease.Err() != nil {
		t.Fatalf("lease lost over a busy ledger: %v", lease.Err())
	}
}

// heartbeatAt is the ledger's heartbeat time for lock (its clock is
// time.Now, the wall clock this process reads too).
func heartbeatAt(t *testing.T, l *Ledger, lock string) time.Time {
	t.Helper()
	var s string
	if err := l.DB().QueryRow(`SELECT heartbeat_at FROM locks WHERE lock_name = ?`, lock).Scan(&s); err != nil {
		t.Fatal(err)
	}
	at, err := events.ParseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// awaitLost returns when the lease was lost, and the time it saw that.
func awaitLost(t *testing.T, lease *Lease) time.Time {
	t.Helper()
	select {
	case <-lease.Lost():
		return time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("lease not lost though no heartbeat gets through")
	}
	return time.Time{}
}

// checkLostAtDeadline checks that the lease gave up at its local deadline
// (not earlier) and while the ledger still counted it as the holder.
func checkLostAtDeadline(t *testing.T, l *Ledger, lease *Lease, lostAt time.Time, ttl time.Duration) *DeadlineError {
	t.Helper()
	var de *DeadlineError
	if !errors.As(lease.Err(), &de) || !errors.Is(lease.Err(), ErrLost) {
		t.Fatalf("Err() = %v, want a *DeadlineError wrapping ErrLost", lease.Err())
	}
	hb := heartbeatAt(t, l, lease.Lock())
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
	l := openReal(t, WithBusyTimeout(time.Minute))
	ttl := 2 * time.Second
	lease, err := l.Acquire(ctx, "svc", WithTTL(ttl), WithHeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// Count from a heartbeat, not from the acquire.
	awaitEvent(t, l, events.LockHeartbeat, 10*time.Second, func(any) bool { return true })
	release := holdWriter(t, l)
	defer release()
	lostAt := awaitLost(t, lease)
	de := checkLostAtDeadline(t, l, lease, lostAt, ttl)
	if de.Failures != 0 || de.LastErr != nil || de.Margin != DefaultLossMargin(ttl) {
		t.Fatalf("deadline error %+v: want the hung call (no failure returned) and the default margin", de)
	}
	// The ledger cannot be reached: Release says the lock was lost, at once.
	if err := lease.Release(ctx, Result{Result: events.ResultCancelled}); !errors.As(err, &de) {
		t.Fatalf("Release after the deadline: %v, want the *DeadlineError", err)
	}
}

// Heartbeats that fail (busy past a short busy timeout) lose the lock at
// the same deadline; the loss is recorded once the ledger answers, and
// Release reports the loss even though it frees the lock.
func TestLeaseLostWhenNoHeartbeatSucceedsBeforeTheDeadline(t *testing.T) {
	ctx := context.Background()
	l := openReal(t, WithBusyTimeout(20*time.Millisecond))
	ttl := 2 * time.Second
	// A wide margin gives the loss three quarters of a second to be recorded
	// once the writer mutex is freed.
	lease, err := l.Acquire(ctx, "svc", WithTTL(ttl), WithHeartbeatInterval(100*time.Millisecond), WithLossMargin(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, l)
	lostAt := awaitLost(t, lease)
	release()
	de := checkLostAtDeadline(t, l, lease, lostAt, ttl)
	if de.Failures == 0 || !IsTransient(de.LastErr) {
		t.Fatalf("deadline error %+v: want the busy failures", de)
	}
	awaitEvent(t, l, events.HeartbeatFailed, 10*time.Second, func(p any) bool { return p.(*events.HeartbeatFailedPayload).LockLost })
	if err := lease.Release(ctx, Result{Result: events.ResultCancelled}); !errors.Is(err, ErrLost) {
		t.Fatalf("Release after the deadline: %v, want ErrLost", err)
	}
	awaitEvent(t, l, events.LockReleased, time.Second, func(any) bool { return true })
}

func TestLeaseLossMarginIsChecked(t *testing.T) {
	l := openReal(t)
	for _, c := range []struct {
		name string
		opts []LeaseOption
	}{
		{"zero", []LeaseOption{WithLossMargin(0)}},
		{"negative", []LeaseOption{WithLossMargin(-time.Second)}},
		{"the ttl", []LeaseOption{WithTTL(3 * time.Second), WithLossMargin(3 * time.Second)}},
		{"no room for a heartbeat", []LeaseOption{WithTTL(3 * time.Second), WithHeartbeatInterval(time.Second), WithLossMargin(2 * time.Second)}},
	} {
		if _, err := l.Acquire(context.Background(), "m", c.opts...); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
}

func TestLeaseLostToAnotherHolder(t *testing.T) {
	ctx := context.Background()
	l := openReal(t)
	lease, err := l.Acquire(ctx, "svc", WithTTL(3*time.Second), WithHeartbeatInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Steal(ctx, StealRequest{AcquireRequest: AcquireRequest{Lock: "svc", TTL: time.Minute}, Active: true, Note: "test"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not lost after a steal")
	}
	var nh *NotHolderError
	if !errors.As(lease.Err(), &nh) || nh.Holder == nil || !errors.Is(lease.Err(), ErrLost) {
		t.Fatalf("Err() = %v, want *NotHolderError naming the new holder", lease.Err())
	}
	if err := lease.Release(ctx, Result{}); !errors.Is(err, ErrLost) {
		t.Fatalf("Release of a stolen lease: %v, want ErrLost", err)
	}
}

func TestLeaseWaitsForRelease(t *testing.T) {
	ctx := context.Background()
	l := openReal(t)
	first, err := l.Acquire(ctx, "q", WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctx, "q", WithWait(100*time.Millisecond))
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.RequestID != first.RequestID() || held.Waited < 100*time.Millisecond {
		t.Fatalf("waiting on a held lock: %v", err)
	}
	done := make(chan *Lease, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := l.Acquire(wctx, "q")
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	time.Sleep(100 * time.Millisecond) // let the waiter block and back off
	released := time.Now()
	if err := first.Release(ctx, Result{}); err != nil {
		t.Fatal(err)
	}
	second := <-done
	if second == nil {
		t.FailNow()
	}
	defer second.Release(ctx, Result{})
	if woke := time.Since(released); woke > 500*time.Millisecond {
		t.Fatalf("waiter took %s after the release to get the lock", woke)
	}
	if second.FencingToken() <= first.FencingToken() {
		t.Fatalf("fencing token %d after %d", second.FencingToken(), first.FencingToken())
	}
}
