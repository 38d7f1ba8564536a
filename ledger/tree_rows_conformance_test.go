package ledger_test

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/ledger"
)

// On both engines an INSERT never takes the place of a Merkle row or a
// checkpoint, whatever its ON CONFLICT clause, and no checkpoint row
// covers events the log does not hold; the storage check knows the
// triggers that say so.
func TestConformanceTreeRowsRefuseUpsertAndCheckpointsBeyondTheLog(t *testing.T) {
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
		for i := range 2 {
			rid := fmt.Sprintf("r%d", i)
			if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "c", Identity: as(rid)}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "c", Identity: as(rid)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		rows := func() string {
			var s string
			if err := l.DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM checkpoints) || '/' || (SELECT count(*) FROM tlog_hashes) || '/' ||
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
			if _, err := l.DB().ExecContext(ctx, q); err == nil {
				t.Errorf("%s: the database took it, want it refused", q)
			}
		}
		if after := rows(); after != before {
			t.Fatalf("the rows changed: %s, were %s", after, before)
		}
		verifyOK(t, l)
	})
}
