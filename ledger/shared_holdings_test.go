package ledger_test

import (
	"context"
	"testing"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// Shared holdings are holdings too: the timeline draws one bar for each
// reader, overlapping, and for the writer after them.
func TestHoldingsShowEverySharedHolder(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l := f.open("host-a")
		for _, rid := range []string{"r1", "r2"} {
			if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "db", Identity: as(rid), Shared: true}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "db", Identity: as("r1")}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "db", Identity: as("r2")}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "db", Identity: as("w")}); err != nil {
			t.Fatal(err)
		}
		hs, err := replay.Holdings(ctx, pgtest.Open(t, l.Source()), replay.Filter{Lock: "db"})
		if err != nil {
			t.Fatal(err)
		}
		type span struct {
			rid    string
			shared bool
			ended  bool
		}
		var got []span
		for _, h := range hs {
			got = append(got, span{h.Opened.RequestID, h.Shared, h.Ended != nil})
		}
		want := []span{{"r1", true, true}, {"r2", true, true}, {"w", false, false}}
		if len(got) != len(want) {
			t.Fatalf("holdings: got %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("holding %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}
