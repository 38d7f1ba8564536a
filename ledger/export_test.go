package ledger

import "testing"

// SetSnapshotEvery stores a snapshot every n events, not every
// replay.SnapshotEvery, until t ends: a log with snapshots in it is then
// a few hundred events long. t must not be parallel (a ledger of another
// test would read the spacing this one set).
func SetSnapshotEvery(t testing.TB, n int64) {
	t.Helper()
	old := snapshotEvery
	snapshotEvery = n
	t.Cleanup(func() { snapshotEvery = old })
}
