package replay_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// TestHoldingsFollowTheFold: each acquisition or steal opens a holding,
// the release or steal after it ends it, one still held has no end; a
// window keeps the holdings that overlap it, those begun before it too,
// and --actor picks holdings by their opener.
func TestHoldingsFollowTheFold(t *testing.T) {
	root := t.TempDir()
	base := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	c := testclock.New(base)
	l := openScripted(t, root, c, nil)
	ctx := context.Background()
	id := func(rid, actor string) ledger.Identity {
		return ledger.Identity{RequestID: rid, Actor: actor, PID: 4242}
	}
	step := func() { c.Add(time.Minute) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "a", Identity: id("r1", "alice"), TTL: time.Hour}) // seq 1
	must(err)
	step()
	_, err = l.Release(ctx, ledger.ReleaseRequest{Lock: "a", Identity: id("r1", "alice")}) // 2
	must(err)
	step()
	_, err = l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "a", Identity: id("r2", "bob"), TTL: time.Hour}) // 3
	must(err)
	step()
	_, err = l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "a", Identity: id("r3", "carol"), TTL: time.Hour}, Active: true}) // 4
	must(err)
	step()
	_, err = l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "b", Identity: id("r4", "alice"), TTL: time.Hour}) // 5
	must(err)

	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, "ledger.db")+"?mode=ro")
	must(err)
	defer db.Close()
	text := func(f replay.Filter) string {
		t.Helper()
		hs, err := replay.Holdings(ctx, db, f)
		must(err)
		s := ""
		for _, h := range hs {
			end := "open"
			if h.Ended != nil {
				end = fmt.Sprint(h.Ended.Seq)
			}
			s += fmt.Sprintf("%s:%d-%s ", h.Lock, h.Opened.Seq, end)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		f    replay.Filter
		want string
	}{
		{"all", replay.Filter{}, "a:1-2 a:3-4 a:4-open b:5-open "},
		{"one lock", replay.Filter{Lock: "a"}, "a:1-2 a:3-4 a:4-open "},
		// From bob's acquisition on: alice's first holding ended before.
		{"since", replay.Filter{Since: base.Add(2 * time.Minute)}, "a:3-4 a:4-open b:5-open "},
		// Up to bob's acquisition: his holding is still open then.
		{"until", replay.Filter{Until: base.Add(2 * time.Minute)}, "a:1-2 a:3-open "},
		{"actor", replay.Filter{Actor: "alice"}, "a:1-2 b:5-open "},
	} {
		if got := text(tc.f); got != tc.want {
			t.Errorf("%s: holdings %q, want %q", tc.name, got, tc.want)
		}
	}
}
