package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/oldschema"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/store"
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
	if err := db.QueryRow(`SELECT count(*) FROM tlog_hashes WHERE seq > $1`, n).Scan(&extra); err != nil {
		t.Fatal(err)
	}
	if extra > 0 {
		return fmt.Sprintf("%d rows of stored hashes beyond the %d events", extra, n)
	}
	return ""
}

func TestEveryAppendStoresItsMerkleHashesInItsTransaction(t *testing.T) {
	t.Parallel()
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
	if m := treeMismatch(t, pgtest.Open(t, e.l.Source())); m != "" {
		t.Fatal(m)
	}
	// The root a reader gets from the stored rows is tlog's over the bodies.
	root, err := tlog.TreeHash(40, store.TreeReader(ctx, pgtest.Open(t, e.l.Source())))
	if err != nil {
		t.Fatal(err)
	}
	var tree checkpoint.Tree
	rows, err := pgtest.Open(t, e.l.Source()).Query(`SELECT body FROM events ORDER BY seq`)
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
	t.Parallel()
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
	for _, q := range append(slices.Clip(oldschema.Version9), `ALTER TABLE locks DROP COLUMN pid_ns`, `DROP TABLE tlog_hashes`, `DROP TABLE checkpoints`, `DROP TABLE lock_holders`, `DROP TABLE cosignatures`,
		`DROP TRIGGER events_prune_marker`, `DROP TABLE prune_horizon`, `DROP TABLE prune_restore`,
		`DELETE FROM schema_migrations WHERE version >= 4`) {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(ctx, e.root, ReadOnly()); err == nil {
		t.Fatal("a read-only open of the old schema succeeded")
	}
	l, err := Open(ctx, e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe), WithHost(Host{ID: "host-a", BootID: "boot-1"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if m := treeMismatch(t, pgtest.Open(t, l.Source())); m != "" {
		t.Fatal(m)
	}
	// And appends go on from there.
	if _, err := l.TryAcquire(ctx, req("after", "r", 100)); err != nil {
		t.Fatal(err)
	}
	if m := treeMismatch(t, pgtest.Open(t, l.Source())); m != "" {
		t.Fatal(m)
	}
}

// insertUnhashed appends raw events seq from..to with no stored hashes, as
// sqlite3 would: valid events are not needed, only rows for the tree.
func insertUnhashed(t *testing.T, db *sql.DB, from, to int) {
	t.Helper()
	// One statement for all the rows: the test needs more rows than a
	// backfill batch, and one statement per row took a minute under -race.
	r, err := db.Exec(`WITH RECURSIVE n(seq) AS (SELECT $1 UNION ALL SELECT seq + 1 FROM n WHERE seq < $2)
		INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
		SELECT seq, 'id-' || seq, 'lock_heartbeat', 'a', 'r', 't', '2026-01-02T10:00:00Z', '{"seq":' || seq || '}', '', '' FROM n`,
		from, to)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.RowsAffected(); err != nil || n != int64(to-from+1) {
		t.Fatalf("inserted %d rows (%v), want %d", n, err, to-from+1)
	}
}

// An upgrade whose backfill stopped between two batches (the process was
// killed) is finished by the next writing open: the marker it left says
// the missing hashes are the upgrade's, not damage.
func TestWritingOpenFinishesAnUnfinishedUpgradeOfTheTree(t *testing.T) {
	t.Parallel()
	e := open(t)
	ctx := context.Background()
	if _, err := e.l.TryAcquire(ctx, req("a", "r", 100)); err != nil {
		t.Fatal(err)
	}
	e.l.Close()
	db := rawDB(t, e.root)
	insertUnhashed(t, db, 2, store.BackfillBatch+7)
	if _, err := db.Exec(`INSERT INTO meta (key, value) VALUES ($1, 'in progress')`, store.BackfillMarker); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, e.root, WithHost(Host{ID: "host-a", BootID: "boot-1"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if m := treeMismatch(t, pgtest.Open(t, l.Source())); m != "" {
		t.Fatal(m)
	}
	var marked int
	if err := pgtest.Open(t, l.Source()).QueryRow(`SELECT count(*) FROM meta WHERE key = $1`, store.BackfillMarker).Scan(&marked); err != nil || marked != 0 {
		t.Fatalf("marker left after the backfill: %d %v", marked, err)
	}
}

// Events appended without stored hashes to a ledger that keeps them were
// written by something other than lockledger: the writing open leaves
// them without hashes (verify reports them), writers and checkpoints
// refuse to go on after them, and only project --accept-broken-chain
// computes their hashes.
func TestWritersRefuseEventsAppendedWithoutMerkleHashes(t *testing.T) {
	t.Parallel()
	s, _ := testKey(t)
	e := open(t, WithSigner(s))
	ctx := context.Background()
	if _, err := e.l.TryAcquire(ctx, req("a", "r", 100)); err != nil {
		t.Fatal(err)
	}
	e.l.Close()
	insertUnhashed(t, rawDB(t, e.root), 2, 3)
	l, err := Open(ctx, e.root, WithSigner(s), WithClock(e.clock.Now), WithProcessProbe(e.probe),
		WithHost(Host{ID: "host-a", BootID: "boot-1"}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var hashed int64
	if err := pgtest.Open(t, l.Source()).QueryRow(`SELECT max(seq) FROM tlog_hashes`).Scan(&hashed); err != nil || hashed != 1 {
		t.Fatalf("the open stored hashes up to seq %d (%v), want 1: the forged events were hashed", hashed, err)
	}
	_, err = l.TryAcquire(ctx, req("b", "r2", 100))
	if !errors.Is(err, ErrUnhashed) || !strings.Contains(err.Error(), "seq 2 ") {
		t.Fatalf("acquire after unhashed events: %v, want ErrUnhashed naming seq 2", err)
	}
	if _, err := l.Checkpoint(ctx); !errors.Is(err, ErrUnhashed) {
		t.Fatalf("checkpoint after unhashed events: %v, want ErrUnhashed", err)
	}
	if _, err := l.Project(ctx); !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("project without accepting: %v, want ErrBrokenChain", err)
	}
	if _, err := l.Project(ctx, AcceptBrokenChain()); err != nil {
		t.Fatalf("project --accept-broken-chain: %v", err)
	}
	if m := treeMismatch(t, pgtest.Open(t, l.Source())); m != "" {
		t.Fatal(m)
	}
	if _, err := l.TryAcquire(ctx, req("b", "r2", 100)); err != nil {
		t.Fatalf("acquire after the accepted events: %v", err)
	}
}
