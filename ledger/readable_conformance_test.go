package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/migrations"
)

// A read-only open reads a ledger whose newer migrations only add indexes
// (migrations.Set.ReadableFrom) as it stands, changing nothing; one older
// than that is still refused with ErrOldSchema until a writer migrates it.
func TestConformanceReadOnlyOpenReadsALedgerMissingOnlyIndexes(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		root := t.TempDir()
		set := migrations.SQLite
		if f.url != "" {
			set = migrations.Postgres
		}
		open := func(opts ...ledger.Option) (*ledger.Ledger, error) {
			opts = append(opts, ledger.Unsigned())
			if f.url != "" {
				opts = append(opts, ledger.WithDatabase(f.url))
			}
			l, err := ledger.Open(ctx, root, opts...)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return l, err
		}
		l, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: as("rx"), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		db := pgtest.Open(t, l.Source())
		l.Close()
		version := func() int {
			t.Helper()
			v, err := set.Current(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		// Back to the version a lockledger before the indexes (and, on
		// PostgreSQL, a decision's functions, which only writers call) left.
		back := []string{`DROP INDEX locks_updated_seq`, `DROP INDEX lock_holders_updated_seq`,
			fmt.Sprintf(`DELETE FROM schema_migrations WHERE version > %d`, set.ReadableFrom())}
		if f.url != "" {
			back = append(back, `DROP FUNCTION lockledger_read_decision(text, text, boolean)`, `DROP FUNCTION lockledger_write_decision(json)`,
				`DROP INDEX events_waiters`)
		}
		for _, q := range back {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		r, err := open(ledger.ReadOnly())
		if err != nil {
			t.Fatalf("a read-only open of schema %d (indexes missing only): %v", set.ReadableFrom(), err)
		}
		if s, err := r.Status(ctx, "x"); err != nil || s.Holder == nil || s.Holder.RequestID != "rx" {
			t.Fatalf("status of x read-only: %+v, %v; want held by rx", s, err)
		}
		verifyOK(t, r)
		r.Close()
		if v := version(); v != set.ReadableFrom() {
			t.Errorf("the read-only open changed the schema: version %d, want %d", v, set.ReadableFrom())
		}

		var name string
		if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT name FROM schema_migrations WHERE version = %d`, set.ReadableFrom())).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`DELETE FROM schema_migrations WHERE version = %d`, set.ReadableFrom())); err != nil {
			t.Fatal(err)
		}
		if _, err := open(ledger.ReadOnly()); !errors.Is(err, ledger.ErrOldSchema) {
			t.Fatalf("a read-only open of schema %d: %v, want ErrOldSchema", set.ReadableFrom()-1, err)
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, $1, 'x')`, set.ReadableFrom()), name); err != nil {
			t.Fatal(err)
		}
		w, err := open()
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if v := version(); v != set.Latest() {
			t.Errorf("a writer's open left version %d, want %d", v, set.Latest())
		}
	})
}
