package ledger_test

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// On both engines an INSERT never takes the place of a Merkle row or a
// checkpoint, whatever its ON CONFLICT clause, and no checkpoint row
// covers events the log does not hold; the storage check knows the
// triggers that say so.
func TestConformanceTreeRowsRefuseUpsertAndCheckpointsBeyondTheLog(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		skey, _, err := note.GenerateKey(nil, "conformance")
		if err != nil {
			t.Fatal(err)
		}
		signer, err := note.NewSigner(skey)
		if err != nil {
			t.Fatal(err)
		}
		l := f.open("host-a", ledger.WithSigner(signer))
		cycles(t, l, 2)
		if _, err := l.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		rows := func() string {
			var s string
			if err := pgtest.Open(t, l.Source()).QueryRowContext(ctx, `SELECT (SELECT count(*) FROM checkpoints) || '/' || (SELECT count(*) FROM tlog_hashes) || '/' ||
				(SELECT max(note) FROM checkpoints) || '/' || (SELECT sum(length(hashes)) FROM tlog_hashes)`).Scan(&s); err != nil {
				t.Fatal(err)
			}
			return s
		}
		before := rows()
		const cpCols = `id, size, root, note, key_name, created_at`
		for _, q := range []string{
			`INSERT INTO checkpoints (` + cpCols + `) SELECT ` + cpCols + ` FROM checkpoints WHERE id = (SELECT min(id) FROM checkpoints)
				ON CONFLICT (id) DO NOTHING`,
			`INSERT INTO checkpoints (` + cpCols + `) SELECT ` + cpCols + ` FROM checkpoints WHERE id = (SELECT min(id) FROM checkpoints)
				ON CONFLICT (id) DO UPDATE SET note = 'forged'`,
			`INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES (1000000000000, 'x', 'garbage', 'conformance', '2026-01-01T00:00:00Z')`,
			`INSERT INTO tlog_hashes (seq, hashes) SELECT seq, hashes FROM tlog_hashes WHERE seq = 2 ON CONFLICT (seq) DO NOTHING`,
		} {
			if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, q); err == nil {
				t.Errorf("%s: the database took it, want it refused", q)
			}
		}
		if after := rows(); after != before {
			t.Fatalf("the rows changed: %s, were %s", after, before)
		}
		verifyOK(t, l)
	})
}

// On both engines verify tells a Merkle row emptied behind the triggers'
// back (0 bytes stored) from one that is missing.
func TestConformanceVerifyNamesAnEmptiedMerkleRow(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l := f.open("host-a")
		cycles(t, l, 2)
		verifyOK(t, l)
		drop, empty := `DROP TRIGGER tlog_hashes_no_update`, `UPDATE tlog_hashes SET hashes = x'' WHERE seq = 2`
		if f.url != "" {
			drop, empty = drop+` ON tlog_hashes`, `UPDATE tlog_hashes SET hashes = ''::bytea WHERE seq = 2`
		}
		for _, q := range []string{drop, empty} {
			if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		rep, err := l.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || rep.FirstBad == nil || rep.FirstBad.Seq != 2 || !strings.Contains(rep.FirstBad.Detail, "hold 0 bytes") {
			t.Fatalf("want seq 2's Merkle hashes reported as 0 bytes, got %+v", rep.Problems)
		}
	})
}
