package archive_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/archive"
	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// signer is a checkpoint key for a test ledger.
type signer struct {
	s note.Signer
	v note.Verifier
}

func newSigner(t testing.TB) signer {
	skey, vkey, err := checkpoint.GenerateKey("archive-test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return signer{s, v}
}

// eventsWanted is the size of the ledgers these tests prune:
// LOCKLEDGER_STRESS=1 makes it 200k.
func eventsWanted() int {
	if os.Getenv("LOCKLEDGER_STRESS") == "1" {
		return 200_000
	}
	return 1000
}

func who() ledger.Identity { return ledger.Identity{Actor: "archivist"} }

// cycles acquires and releases n locks through the ledger: every write
// signs a checkpoint (policy 1).
func cycles(t testing.TB, l *ledger.Ledger, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		lock := "cycle-" + strconv.Itoa(i%7)
		a, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: who()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: ledger.Identity{Actor: "archivist", RequestID: a.RequestID}}); err != nil {
			t.Fatal(err)
		}
	}
}

func verifyLedger(t testing.TB, l *ledger.Ledger, sg signer) *verify.Report {
	t.Helper()
	rep, err := l.Verify(context.Background(), ledger.CheckAgainst(&replay.Trust{Verifiers: []note.Verifier{sg.v}, Expected: true}))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func mustOK(t testing.TB, what string, rep *verify.Report) {
	t.Helper()
	if !rep.OK {
		t.Fatalf("%s: verify fails: %+v (problems %v)", what, rep.FirstBad, rep.Problems)
	}
}

// pruneScenario archives a signed ledger below a checkpoint, prunes it
// and checks what stays true afterwards. It returns the boundary.
func pruneScenario(t *testing.T, l *ledger.Ledger, sg signer, dir string) int64 {
	ctx := context.Background()
	mustOK(t, "before the prune", verifyLedger(t, l, sg))

	// A boundary: the largest checkpoint boundary of events all dated
	// before now, short of the head.
	tx, err := l.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	below, err := archive.Boundary(ctx, tx, 0, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Boundary(ctx, tx, below+1, time.Time{}); !errors.Is(err, store.ErrPruneBoundary) {
		t.Fatalf("--below %d (no checkpoint of size %d): %v, want a boundary error", below+1, below, err)
	}
	// An inclusion proof made before the prune, of an event it archives,
	// and the checkpoint it was made against.
	cps, err := store.StoredCheckpoints(ctx, tx, below-1, below-1)
	if err != nil || len(cps) == 0 {
		t.Fatalf("no checkpoint at the boundary: %v", err)
	}
	cp, err := checkpoint.Open(cps[0].Note, sg.v)
	if err != nil {
		t.Fatal(err)
	}
	oldSeq := below / 2
	oldPath, err := checkpoint.ProveInclusion(oldSeq, cp.Checkpoint, store.TreeReader(ctx, tx))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tWrite := time.Now()
	w, err := archive.Write(ctx, tx, &buf, below)
	dWrite := time.Since(tWrite)
	tx.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	if w.FirstSeq != 1 || w.LastSeq != below-1 || w.Events != below-1 {
		t.Fatalf("archive wrote %+v, want seq 1-%d", w, below-1)
	}
	path := filepath.Join(dir, "archive.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var oldLeaf tlog.Hash
	if _, err := replay.ReadExport(bytes.NewReader(buf.Bytes()), func(r *replay.Row) error {
		if r.Seq == oldSeq {
			oldLeaf = checkpoint.LeafHash(r.Body)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// The archive verifies on its own, against the signer's key.
	trust := replay.WithTrust(&replay.Trust{Verifiers: []note.Verifier{sg.v}, Expected: true})
	tRead := time.Now()
	c, err := archive.Read(bytes.NewReader(buf.Bytes()), path, "", trust)
	if err != nil {
		t.Fatal(err)
	}
	dRead := time.Since(tRead)
	if c.LedgerID != l.ID() || c.Report.Trust == verify.Unsigned {
		t.Fatalf("archive read as ledger %s, trust %q", c.LedgerID, c.Report.Trust)
	}

	// A changed archive is refused, and so is one that ends elsewhere.
	bad := bytes.Replace(buf.Bytes(), []byte(`"actor":"`), []byte(`"actor":"x`), 1)
	if _, err := archive.Read(bytes.NewReader(bad), path, "", trust); !errors.Is(err, archive.ErrMismatch) {
		t.Fatalf("an edited archive: %v, want ErrMismatch", err)
	}
	head := func() int64 {
		tx, err := l.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		_, n, err := store.TreeLag(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := head()
	another := *c
	another.LedgerID = "another-ledger"
	if _, err := l.Prune(ctx, who(), &another, path); !errors.Is(err, archive.ErrMismatch) {
		t.Fatalf("an archive of another ledger: %v, want ErrMismatch", err)
	}
	if head() != before {
		t.Fatal("a refused prune appended")
	}

	tPrune := time.Now()
	seq, err := l.Prune(ctx, who(), c, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("archive of %d events (%d bytes): written in %s, read and verified alone in %s, pruned (checked against the live log, deleted, marker signed) in %s",
		w.Events, buf.Len(), dWrite.Round(time.Millisecond), dRead.Round(time.Millisecond), time.Since(tPrune).Round(time.Millisecond))
	if seq != before+1 {
		t.Fatalf("the marker is seq %d, want %d (seqs never go back)", seq, before+1)
	}

	// Plain verify: OK, and it names the boundary.
	rep := verifyLedger(t, l, sg)
	mustOK(t, "after the prune", rep)
	if rep.Archived == nil || rep.Archived.BelowSeq != below || rep.Archived.ArchiveSHA256 != c.SHA256 || rep.FirstSeq != below {
		t.Fatalf("after the prune: archived %+v, first seq %d; want below %d, sha %s", rep.Archived, rep.FirstSeq, below, c.SHA256)
	}
	// project needs the whole log: it refuses, changing nothing.
	if _, err := l.Project(ctx); !errors.Is(err, store.ErrPruned) {
		t.Fatalf("project on a pruned ledger: %v, want ErrPruned", err)
	}
	// With the archive: one log.
	archive.AgainstLedger(rep, l.Genesis(), []*archive.Checked{c})
	mustOK(t, "with the archive", rep)
	// An archive that is not the one recorded is a problem.
	rep = verifyLedger(t, l, sg)
	other := *c
	// Another digest: its first hex digit changed (writing "00" over the
	// first two changed nothing for one archive in 256).
	other.SHA256 = "0" + c.SHA256[1:]
	if c.SHA256[0] == '0' {
		other.SHA256 = "1" + c.SHA256[1:]
	}
	archive.AgainstLedger(rep, l.Genesis(), []*archive.Checked{&other})
	if rep.OK {
		t.Fatal("verify --archive took an archive other than the one the prune recorded")
	}

	// The old proof still verifies against its checkpoint, and the stored
	// tree still gives the same proof and the new head's.
	tx, err = l.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := tlog.CheckRecord(oldPath, cp.Size, cp.Root, checkpoint.Index(oldSeq), oldLeaf); err != nil {
		t.Fatalf("the proof made before the prune: %v", err)
	}
	again, err := checkpoint.ProveInclusion(oldSeq, cp.Checkpoint, store.TreeReader(ctx, tx))
	if err != nil || !slicesEqual(again, oldPath) {
		t.Fatalf("the proof made after the prune differs: %v", err)
	}
	size, _, err := store.LastCheckpoint(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	newRoot, err := tlog.TreeHash(size, store.TreeReader(ctx, tx))
	if err != nil {
		t.Fatal(err)
	}
	ext, err := tlog.ProveTree(size, cp.Size, store.TreeReader(ctx, tx))
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(ext, size, newRoot, cp.Size, cp.Root); err != nil {
		t.Fatalf("the checkpoint before the prune is not extended by the head after it: %v", err)
	}
	path2, err := checkpoint.ProveInclusion(oldSeq, checkpoint.Checkpoint{Size: size, Root: newRoot}, store.TreeReader(ctx, tx))
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckRecord(path2, size, newRoot, checkpoint.Index(oldSeq), oldLeaf); err != nil {
		t.Fatalf("an archived event's inclusion in the head after the prune: %v", err)
	}
	tx.Rollback()

	// Writes go on, with seqs and fencing tokens from the head.
	a, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "after-prune", Identity: who()})
	if err != nil {
		t.Fatal(err)
	}
	if a.FencingToken != seq+1 {
		t.Fatalf("fencing token %d after the prune, want %d", a.FencingToken, seq+1)
	}
	// A holder whose acquisition was archived releases as before.
	rows, err := store.LoadRows(ctx, pgtest.Open(t, l.Source()))
	if err != nil {
		t.Fatal(err)
	}
	released := false
	for _, r := range rows {
		if r.Held && r.FencingToken < below && !released {
			if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: r.Name, Identity: ledger.Identity{Actor: r.Actor, RequestID: r.RequestID}}); err != nil {
				t.Fatalf("releasing %s, held since seq %d, before the boundary: %v", r.Name, r.FencingToken, err)
			}
			released = true
		}
	}
	if !released {
		t.Fatal("no lock held across the boundary to release")
	}
	mustOK(t, "writes after the prune", verifyLedger(t, l, sg))

	// Any other deletion is refused by the triggers.
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `DELETE FROM events WHERE seq = $1`, below+1); err == nil {
		t.Fatal("the triggers let a deletion through after the prune")
	}
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `DELETE FROM events WHERE seq < $1`, below); err != nil {
		t.Fatalf("deleting nothing: %v", err)
	}
	// A second prune of the same archive is refused: it no longer starts
	// where the live log does.
	if _, err := l.Prune(ctx, who(), c, path); !errors.Is(err, archive.ErrMismatch) {
		t.Fatalf("the same archive again: %v, want ErrMismatch", err)
	}

	// Unprune: only the archive the prune recorded; the events come back
	// byte for byte, the head and the seqs stay where they are.
	if _, err := l.Unprune(ctx, who(), archive.Restore(&other, bytes.NewReader(buf.Bytes()), l.ID(), path)); !errors.Is(err, archive.ErrMismatch) {
		t.Fatalf("unprune from an archive the prune did not record: %v, want ErrMismatch", err)
	}
	before = head()
	useq, err := l.Unprune(ctx, who(), archive.Restore(c, bytes.NewReader(buf.Bytes()), l.ID(), path))
	if err != nil {
		t.Fatal(err)
	}
	if useq != before+1 {
		t.Fatalf("the unprune's marker is seq %d, want %d", useq, before+1)
	}
	rep = verifyLedger(t, l, sg)
	mustOK(t, "after the unprune", rep)
	if rep.Archived != nil || rep.FirstSeq != 1 || !rep.Replayed {
		t.Fatalf("after the unprune: archived %+v, first seq %d, replayed %v; want the whole log from seq 1", rep.Archived, rep.FirstSeq, rep.Replayed)
	}
	if _, err := l.Unprune(ctx, who(), archive.Restore(c, bytes.NewReader(buf.Bytes()), l.ID(), path)); !errors.Is(err, archive.ErrMismatch) {
		t.Fatalf("a second unprune: %v, want ErrMismatch", err)
	}
	if _, err := l.Project(ctx); err != nil {
		t.Fatalf("project after the unprune: %v", err)
	}
	// And prune again, from the same archive.
	if _, err := l.Prune(ctx, who(), c, path); err != nil {
		t.Fatalf("the prune again after the unprune: %v", err)
	}
	rep = verifyLedger(t, l, sg)
	mustOK(t, "pruned again", rep)
	if rep.Archived == nil || rep.Archived.BelowSeq != below {
		t.Fatalf("pruned again: archived %+v", rep.Archived)
	}
	return below
}

func slicesEqual(a, b []tlog.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// handDeletion deletes the live log's first event as someone with the
// database's owner rights would (the trigger dropped first): verify fails.
func handDeletion(t *testing.T, l *ledger.Ledger, sg signer, below int64, drop string) {
	ctx := context.Background()
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, drop); err != nil {
		t.Fatal(err)
	}
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `DELETE FROM events WHERE seq = $1`, below); err != nil {
		t.Fatal(err)
	}
	rep := verifyLedger(t, l, sg)
	if rep.OK || rep.FirstBad == nil || rep.FirstBad.Kind != verify.KindDeleted {
		t.Fatalf("a hand deletion after the prune: ok %v, first bad %+v", rep.OK, rep.FirstBad)
	}
}

// fixtureLedger writes a ledger of eventsWanted() events at a new root
// (fixture.Ledger: bulk-loaded, then projected and signed through the
// ledger) and opens it signing with sg, a checkpoint on every write.
func fixtureLedger(t *testing.T, sg signer) *ledger.Ledger {
	ctx := context.Background()
	root := t.TempDir()
	start := time.Now().Add(-2 * time.Hour)
	if _, _, err := (fixture.Ledger{Events: eventsWanted(), Locks: 40, Start: start, Span: time.Hour}).Write(root); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, root, ledger.WithSigner(sg.s), ledger.WithCheckpointPolicy(1, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if _, err := l.Project(ctx); err != nil {
		t.Fatal(err)
	}
	cycles(t, l, 1)
	return l
}

func TestArchivePruneSQLite(t *testing.T) {
	ctx := context.Background()
	sg := newSigner(t)
	l := fixtureLedger(t, sg)
	cycles(t, l, 2)
	size := func() int64 {
		var n int64
		if err := pgtest.Open(t, l.Source()).QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	sizeBefore := size()
	t0 := time.Now()
	below := pruneScenario(t, l, sg, t.TempDir())
	t1 := time.Now()
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `VACUUM`); err != nil {
		t.Fatal(err)
	}
	sizeAfter := size()
	t.Logf("SQLite, %d events, pruned below seq %d: database %d bytes before, %d after VACUUM; archive, prune and checks %s, VACUUM %s",
		eventsWanted(), below, sizeBefore, sizeAfter, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	if sizeAfter >= sizeBefore*3/4 {
		t.Fatalf("the database is %d bytes after the prune, %d before: it should be much smaller", sizeAfter, sizeBefore)
	}
	mustOK(t, "after VACUUM", verifyLedger(t, l, sg))
	dst, err := ledger.Open(ctx, t.TempDir(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := dst.Import(ctx, l); !errors.Is(err, store.ErrPruned) {
		t.Fatalf("import of a pruned ledger: %v, want ErrPruned", err)
	}
	handDeletion(t, l, sg, below, `DROP TRIGGER events_no_delete`)
}

func TestArchivePrunePostgres(t *testing.T) {
	ctx := context.Background()
	sg := newSigner(t)
	src := fixtureLedger(t, sg)
	url := pgtest.NewDatabase(t)
	l, err := ledger.Open(ctx, src.Root(), ledger.WithDatabase(url), ledger.WithPin(store.PinSkip), ledger.WithSigner(sg.s),
		ledger.WithCheckpointPolicy(1, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Import(ctx, src); err != nil {
		t.Fatal(err)
	}
	cycles(t, l, 2)
	size := func() int64 {
		var n int64
		if err := pgtest.Open(t, l.Source()).QueryRowContext(ctx, `SELECT pg_total_relation_size('events')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	sizeBefore := size()
	t0 := time.Now()
	below := pruneScenario(t, l, sg, t.TempDir())
	t1 := time.Now()
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `VACUUM FULL events`); err != nil {
		t.Fatal(err)
	}
	sizeAfter := size()
	t.Logf("PostgreSQL, %d events, pruned below seq %d: events table %d bytes before, %d after VACUUM FULL; archive, prune and checks %s, VACUUM FULL %s",
		eventsWanted(), below, sizeBefore, sizeAfter, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	if sizeAfter >= sizeBefore*3/4 {
		t.Fatalf("the events table is %d bytes after the prune, %d before: it should be much smaller", sizeAfter, sizeBefore)
	}
	mustOK(t, "after VACUUM FULL", verifyLedger(t, l, sg))
	handDeletion(t, l, sg, below, `DROP TRIGGER events_no_delete ON events`)
}

// TestHorizonWithoutMarker: a horizon opened by hand without its
// marker lets the deletion through only until the next append, which must
// be the marker; the writers refuse any other, and verify names the events
// missing.
func TestHorizonWithoutMarker(t *testing.T) {
	ctx := context.Background()
	sg := newSigner(t)
	l, err := ledger.Open(ctx, t.TempDir(), ledger.WithSigner(sg.s), ledger.WithCheckpointPolicy(1, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cycles(t, l, 5)
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `INSERT INTO prune_horizon (below_seq, marker_seq, archive_sha256) VALUES (3, 99, 'x')`); err == nil {
		t.Fatal("a horizon whose marker is not the next seq was accepted")
	}
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `INSERT INTO prune_horizon (below_seq, marker_seq, archive_sha256) VALUES (3, 11, 'x')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `DELETE FROM events WHERE seq < 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: who()}); err == nil {
		t.Fatal("a writer appended over an open horizon")
	}
	rep := verifyLedger(t, l, sg)
	if rep.OK || rep.FirstBad.Kind != verify.KindDeleted {
		t.Fatalf("events deleted under a horizon without its marker: ok %v, first bad %+v", rep.OK, rep.FirstBad)
	}
}
