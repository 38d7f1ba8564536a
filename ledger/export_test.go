package ledger

import (
	"testing"

	"github.com/lockledger/lockledger/store"
)

// SetSnapshotEvery stores a snapshot every n events, not every
// store.SnapshotEvery, until t ends: a log with snapshots in it is then
// a few hundred events long. t must not be parallel (a ledger of another
// test would read the spacing this one set).
func SetSnapshotEvery(t testing.TB, n int64) {
	t.Helper()
	old := store.SnapshotEvery
	store.SnapshotEvery = n
	t.Cleanup(func() { store.SnapshotEvery = old })
}
