package storagecheck_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/storagecheck"
)

const cosignatureRow = `INSERT INTO cosignatures (id, size, root, witness, key, url, note, cosigned_at) VALUES (1, 1, 'r', 'w', 'k', 'u', 'n', 't')`

// The cosignatures table is append-only as the checkpoints are: an
// UPDATE, a DELETE and a REPLACE are refused, and dropping a guard is
// damage the storage check names, on both engines.
func TestTheCosignaturesTableIsAppendOnlyAndItsTriggersAreChecked(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		l := fixture.Open(t, "")
		ctx := context.Background()
		if _, err := l.DB().ExecContext(ctx, cosignatureRow); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE cosignatures SET size = 2`, `DELETE FROM cosignatures`, strings.Replace(cosignatureRow, "INSERT", "INSERT OR REPLACE", 1),
			cosignatureRow + ` ON CONFLICT (id) DO UPDATE SET size = 2`} {
			if _, err := l.DB().ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "cosignatures are append-only") {
				t.Errorf("%s: %v, want it refused", q, err)
			}
		}
		got := triggerDamage(t, fixture.Open(t, ""), func(ctx context.Context, q replay.Querier, rep *replay.Report) error {
			return storagecheck.SQLite(ctx, q, false, rep)
		}, `DROP TRIGGER cosignatures_no_replace`, `DROP TRIGGER cosignatures_no_delete`)
		want := []string{
			"cosignatures_no_delete on table cosignatures is missing (the migrations create it: CREATE TRIGGER cosignatures_no_delete BEFORE DELETE ON cosignatures)",
			"cosignatures_no_replace on table cosignatures is missing (the migrations create it: CREATE TRIGGER cosignatures_no_replace BEFORE INSERT ON cosignatures)",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		l := fixture.OpenPostgres(t, pgtest.NewDatabase(t))
		ctx := context.Background()
		if _, err := l.DB().ExecContext(ctx, cosignatureRow); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE cosignatures SET size = 2`, `DELETE FROM cosignatures`, `TRUNCATE cosignatures`,
			cosignatureRow + ` ON CONFLICT (id) DO UPDATE SET size = 2`} {
			if _, err := l.DB().ExecContext(ctx, q); err == nil {
				t.Errorf("%s: accepted", q)
			}
		}
		got := triggerDamage(t, fixture.OpenPostgres(t, pgtest.NewDatabase(t)), storagecheck.Postgres,
			`ALTER TABLE cosignatures DISABLE TRIGGER cosignatures_no_replace`)
		if want := []string{"cosignatures_no_replace on table cosignatures is disabled"}; !slices.Equal(got, want) {
			t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
		}
	})
}
