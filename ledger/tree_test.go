package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
)

// treeMismatch compares every stored row with what tlog.StoredHashes makes
// of the events' bodies, and says where they differ ("" when they agree).
func treeMismatch(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT e.seq, e.body, t.hashes FROM events e LEFT JOIN tlog_hashes t USING (seq) ORDER BY e.seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tree checkpoint.Tree
	n := 0
	for rows.Next() {
		var seq int64
		var body, stored []byte
		if err := rows.Scan(&seq, &body, &stored); err != nil {
			t.Fatal(err)
		}
		hs, err := tree.Append(checkpoint.LeafHash(body))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stored, checkpoint.JoinRow(hs)) {
			return fmt.Sprintf("seq %d: stored %x, want %x", seq, stored, checkpoint.JoinRow(hs))
		}
		n++
	}
	var extra int
	if err := db.QueryRow(`SELECT count(*) FROM tlog_hashes WHERE seq > ?`, n).Scan(&extra); err != nil {
		t.Fatal(err)
	}
	if extra > 0 {
		return fmt.Sprintf("%d rows of stored hashes beyond the %d events", extra, n)
	}
	return ""
}

func TestEveryAppendStoresItsMerkleHashesInItsTransaction(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	for i := range 20 {
		lock := fmt.Sprintf("l%d", i%3)
		rid := fmt.Sprintf("r%d", i)
		if _, err := e.l.TryAcquire(ctx, req(lock, rid, 100)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.l.Release(ctx, ReleaseRequest{Lock: lock, Identity: Identity{RequestID: rid, Actor: "t", PID: 100}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, e.l); n != 40 {
		t.Fatalf("%d events", n)
	}
	if m := treeMismatch(t, e.l.DB()); m != "" {
		t.Fatal(m)
	}
	// The root a reader gets from the stored rows is tlog's over the bodies.
	root, err := tlog.TreeHash(40, treeReader(ctx, e.l.DB()))
	if err != nil {
		t.Fatal(err)
	}
	var tree checkpoint.Tree
	rows, err := e.l.DB().Query(`SELECT body FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := tree.Append(checkpoint.LeafHash(b)); err != nil {
			t.Fatal(err)
		}
	}
	rows.Close()
	if want, _ := tree.Root(); root != want {
		t.Fatalf("stored root %s, recomputed %s", root, want)
	}
}

// A ledger written before the tree existed: the writing open that
// migrates it computes the stored hashes of all its events.
func TestWritingOpenComputesTheMerkleHashesOfAnOlderLedger(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	for i := range 30 {
		if _, err := e.l.TryAcquire(ctx, req(fmt.Sprintf("l%d", i), "r", 100)); err != nil {
			t.Fatal(err)
		}
	}
	e.l.Close()
	// Make it the ledger an older lockledger left: no tree, schema 3.
	db := rawDB(t, e.root)
	for _, q := range []string{`DROP TABLE tlog_hashes`, `DROP TABLE checkpoints`, `DELETE FROM schema_migrations WHERE version = 4`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(ctx, e.root, ReadOnly()); err == nil {
		t.Fatal("a read-only open of the old schema succeeded")
	}
	l, err := Open(ctx, e.root, WithClock(func() time.Time { return e.clock.now() }), WithProcessProbe(e.probe), WithHost(Host{ID: "host-a", BootID: "boot-1"}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if m := treeMismatch(t, l.DB()); m != "" {
		t.Fatal(m)
	}
	// And appends go on from there.
	if _, err := l.TryAcquire(ctx, req("after", "r", 100)); err != nil {
		t.Fatal(err)
	}
	if m := treeMismatch(t, l.DB()); m != "" {
		t.Fatal(m)
	}
}

// Events appended past the stored hashes by something other than the
// ledger (the benchmark fixture bulk-loads this way) get theirs from the
// next writing open, in batches that each re-read where the tree stands.
func TestWritingOpenCatchesTheTreeUpWithEventsThatHaveNoHashes(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	if _, err := e.l.TryAcquire(ctx, req("a", "r", 100)); err != nil {
		t.Fatal(err)
	}
	e.l.Close()
	db := rawDB(t, e.root)
	// Valid events are not needed here, only rows for the tree to hash.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for seq := 2; seq < backfillBatch+7; seq++ {
		if _, err := tx.Exec(`INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
			VALUES (?, ?, 'lock_heartbeat', 'a', 'r', 't', '2026-01-02T10:00:00Z', ?, '', '')`,
			seq, fmt.Sprintf("id-%d", seq), fmt.Sprintf(`{"seq":%d}`, seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, e.root, WithHost(Host{ID: "host-a", BootID: "boot-1"}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if m := treeMismatch(t, l.DB()); m != "" {
		t.Fatal(m)
	}
}
