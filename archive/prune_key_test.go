package archive_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/archive"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// TestPruneIsSignedByTheLedgersKey: a Ledger with no signer may not prune
// (ErrNoSigner, nothing changed); a prune signed by a stranger's key goes
// through, but verify with the owner's key names its marker, and still
// does after the owner's next write signs the log through it; with the
// stranger's key trusted too it is OK.
func TestPruneIsSignedByTheLedgersKey(t *testing.T) {
	ctx := context.Background()
	owner, stranger := newSigner(t), newSigner(t)
	root := t.TempDir()
	l, err := ledger.Open(ctx, root, ledger.WithSigner(owner.s), ledger.WithCheckpointPolicy(1, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cycles(t, l, 5)
	tx, err := l.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	below, err := archive.Boundary(ctx, tx, 0, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = archive.Write(ctx, tx, &buf, below)
	tx.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	c, err := archive.Read(bytes.NewReader(buf.Bytes()), "old.jsonl", "", replay.WithTrust(&replay.Trust{Verifiers: []note.Verifier{owner.v}, Expected: true}))
	if err != nil {
		t.Fatal(err)
	}

	keyless, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer keyless.Close()
	if _, err := keyless.Prune(ctx, who(), c, "/archives/old.jsonl"); !errors.Is(err, ledger.ErrNoSigner) {
		t.Fatalf("a prune with no signer: %v, want ErrNoSigner", err)
	}
	mustOK(t, "after the refused prune", verify(t, l, owner))

	other, err := ledger.Open(ctx, root, ledger.WithSigner(stranger.s), ledger.WithCheckpointPolicy(1000, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	seq, err := other.Prune(ctx, who(), c, "/archives/old.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cycles(t, l, 1)
	rep := verify(t, l, owner)
	if rep.OK || !hasProblem(rep, seq, replay.KindCheckpoint) {
		t.Fatalf("a prune signed by a stranger's key, verified with the owner's: ok %v, problems %+v", rep.OK, rep.Problems)
	}
	both, err := l.Verify(ctx, ledger.CheckAgainst(&replay.Trust{Verifiers: []note.Verifier{owner.v, stranger.v}, Expected: true}))
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, "with the stranger's key trusted too", both)

	// A marker that no checkpoint signs at all (its row deleted by
	// whoever can write the database): no key vouches for it.
	var trigger string
	if err := pgtest.Open(t, l.Source()).QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE name = 'checkpoints_no_delete'`).Scan(&trigger); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TRIGGER checkpoints_no_delete`, `DELETE FROM checkpoints WHERE size = ` + strconv.FormatInt(seq, 10), trigger} {
		if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = l.Verify(ctx, ledger.CheckAgainst(&replay.Trust{Verifiers: []note.Verifier{owner.v, stranger.v}, Expected: true}))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || !hasProblem(rep, seq, replay.KindCheckpoint) {
		t.Fatalf("a marker with no checkpoint of its size: ok %v, problems %+v", rep.OK, rep.Problems)
	}
	// Its archive, the one it recorded and one log with the live ledger,
	// vouches for it (as for a marker lockledger wrote before prunes had
	// to be signed): nothing it removed is missing.
	archive.AgainstLedger(rep, rep.Genesis, []*archive.Checked{c})
	if !rep.OK || !slices.ContainsFunc(rep.Notes, func(n string) bool {
		return strings.Contains(n, "archive old.jsonl") && strings.Contains(n, "vouches for it")
	}) {
		t.Fatalf("with its archive given: ok %v, problems %+v, notes %q", rep.OK, rep.Problems, rep.Notes)
	}
	// Another archive of the same events, not the one it recorded, does not.
	rep, err = l.Verify(ctx, ledger.CheckAgainst(&replay.Trust{Verifiers: []note.Verifier{owner.v, stranger.v}, Expected: true}))
	if err != nil {
		t.Fatal(err)
	}
	other2 := *c
	other2.SHA256 = strings.Repeat("0", 64)
	archive.AgainstLedger(rep, rep.Genesis, []*archive.Checked{&other2})
	if rep.OK || !hasProblem(rep, seq, replay.KindCheckpoint) {
		t.Fatalf("with another archive given: ok %v, problems %+v", rep.OK, rep.Problems)
	}
}

func hasProblem(rep *replay.Report, seq int64, kind replay.Kind) bool {
	for _, p := range rep.Problems {
		if p.Seq == seq && p.Kind == kind {
			return true
		}
	}
	return false
}
