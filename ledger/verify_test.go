package ledger_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// TestVerifyInSnapshotReadsTheCallersSnapshot: Verify in a snapshot the
// caller took reports the log as that snapshot holds it, and the caller's
// trust comes back as it was given; without it Verify reads the latest.
func TestVerifyInSnapshotReadsTheCallersSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := ledger.Open(ctx, t.TempDir(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acquire := func(lock string) {
		t.Helper()
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, TTL: time.Minute,
			Identity: ledger.Identity{RequestID: "req-" + lock, Actor: "alice", PID: os.Getpid()}}); err != nil {
			t.Fatal(err)
		}
	}
	acquire("a")
	tx, err := l.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var head int64
	if err := tx.QueryRowContext(ctx, `SELECT max(seq) FROM events`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	acquire("b")
	trust := &replay.Trust{}
	rep, err := l.Verify(ctx, ledger.InSnapshot(tx), ledger.CheckAgainst(trust))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.LastSeq != head || rep.Locks != 1 || rep.LedgerID != l.ID() {
		t.Fatalf("verify in the snapshot of seq %d: OK %v, last seq %d, %d locks, ledger %q; problems %+v",
			head, rep.OK, rep.LastSeq, rep.Locks, rep.LedgerID, rep.Problems)
	}
	if trust.LedgerID != "" || trust.Checkpoints != nil {
		t.Errorf("the caller's trust was changed: %+v", trust)
	}
	latest, err := l.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !latest.OK || latest.LastSeq <= head || latest.Locks != 2 {
		t.Fatalf("verify of the latest: OK %v, last seq %d (snapshot's %d), %d locks; problems %+v",
			latest.OK, latest.LastSeq, head, latest.Locks, latest.Problems)
	}
}

// TestVerifyDuringWrites runs verify over and over while another handle on
// the same root keeps acquiring, renewing and releasing: a write caught
// between its table commit and its file change must never be reported as
// damage.
func TestVerifyDuringWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	open := func() *ledger.Ledger {
		l, err := ledger.Open(ctx, root, ledger.Unsigned())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	writer, reader := open(), open()
	done := make(chan error, 1)
	go func() {
		id := ledger.Identity{Actor: "w", PID: os.Getpid()}
		for i := range 40 {
			id.RequestID = fmt.Sprint("req-", i)
			lock := fmt.Sprint("l", i%3)
			if _, err := writer.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id, TTL: time.Minute}); err != nil {
				done <- err
				return
			}
			if _, err := writer.Heartbeat(ctx, lock, id); err != nil {
				done <- err
				return
			}
			if i%2 == 0 {
				if _, err := writer.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: id}); err != nil {
					done <- err
					return
				}
			} else if _, err := writer.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: id, Force: true}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for runs := 0; ; runs++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if rep := verifyAll(t, reader); !rep.OK {
				t.Fatalf("after the writes: %+v", rep.Problems)
			}
			t.Logf("%d verifies during the writes", runs)
			return
		default:
		}
		rep, err := reader.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK {
			t.Fatalf("verify during writes reported damage: %+v", rep.Problems)
		}
	}
}
