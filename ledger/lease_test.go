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

func TestLeaseLostWhenTTLRunsOutWithoutHeartbeat(t *testing.T) {
	ctx := context.Background()
	l := openReal(t, WithBusyTimeout(20*time.Millisecond))
	lease, err := l.Acquire(ctx, "svc", WithTTL(time.Second), WithHeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, l)
	select {
	case <-lease.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not lost after the TTL ran out without a heartbeat")
	}
	release()
	if !errors.Is(lease.Err(), ErrLost) {
		t.Fatalf("Err() = %v, want ErrLost", lease.Err())
	}
	awaitEvent(t, l, events.HeartbeatFailed, 10*time.Second, func(p any) bool { return p.(*events.HeartbeatFailedPayload).LockLost })
	if err := lease.Release(ctx, Result{}); !errors.Is(err, ErrLost) && !errors.Is(err, ErrNotHolder) {
		// The ledger still shows us as holder (nobody took it), so Release succeeds.
		if err != nil {
			t.Fatalf("Release after loss: %v", err)
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
