package ledger_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
)

// On both engines store.LockNames lists each lock the log has an event
// of once, released ones included, by prefix, sorted, within its limit.
func TestConformanceLockNamesOfThePast(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l := f.open("host-a")
		for i, n := range []string{"night_owl", "nightly", "deploy-prod", "nightly"} {
			rid := as("r" + string(rune('a'+i)))
			if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: n, Identity: rid}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: n, Identity: rid}); err != nil {
				t.Fatal(err)
			}
		}
		tx, err := l.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, c := range []struct {
			prefix string
			limit  int
			want   []string
		}{
			{"", 10, []string{"deploy-prod", "night_owl", "nightly"}},
			{"night", 10, []string{"night_owl", "nightly"}},
			{"night_", 10, []string{"night_owl"}},
			{"", 1, []string{"deploy-prod"}},
			{"z", 10, nil},
		} {
			got, err := store.LockNames(ctx, tx, c.prefix, c.limit)
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("LockNames(%q, %d) = %v, %v; want %v", c.prefix, c.limit, got, err, c.want)
			}
		}
	})
}
