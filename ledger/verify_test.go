package ledger_test

import (
	"context"
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
	ctx := context.Background()
	l, err := ledger.Open(ctx, t.TempDir())
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
