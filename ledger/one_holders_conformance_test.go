package ledger_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/oldschema"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// A ledger the schema before one table of holders left (SQLite 9,
// PostgreSQL 7: its exclusive holder in the locks row, the shared ones in
// lock_holders) opens with one table of holders: verify is clean, status
// shows the same holders, the holders still hold, and writes go on.
func TestConformanceOldLedgerOpensWithOneHoldersTable(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		root := t.TempDir() // one root for both opens: the lock files stay where they were placed
		open := func() *ledger.Ledger {
			t.Helper()
			opts := []ledger.Option{ledger.WithHost(ledger.Host{ID: "host-a", BootID: "boot-host-a"}), ledger.Unsigned()}
			if f.url != "" {
				opts = append(opts, ledger.WithDatabase(f.url))
			}
			l, err := ledger.Open(ctx, root, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return l
		}
		me := func(rid string) ledger.Identity {
			return ledger.Identity{RequestID: rid, Actor: "conformance", PID: os.Getpid()}
		}
		l := open()
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: me("rx"), TTL: time.Hour,
			Metadata: map[string]string{"ticket": "T-1"}}); err != nil {
			t.Fatal(err)
		}
		for _, rid := range []string{"r1", "r2"} {
			if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "pool", Identity: me(rid), TTL: time.Hour, Limit: 2}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "gone", Identity: me("rg"), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "gone", Identity: me("rg")}); err != nil {
			t.Fatal(err)
		}
		holders := func(l *ledger.Ledger) string {
			t.Helper()
			var b strings.Builder
			for _, lock := range []string{"x", "pool", "gone"} {
				s, err := l.Status(ctx, lock)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "%s: %s %s limit %d", lock, s.State, s.Mode, s.Limit)
				if s.Holder != nil {
					fmt.Fprintf(&b, " holder %s token %d %v", s.Holder.RequestID, s.FencingToken, s.Holder.Metadata)
				}
				for _, h := range s.Shared {
					fmt.Fprintf(&b, " shared %s token %d %s", h.Holder.RequestID, h.FencingToken, h.State)
				}
				b.WriteString("\n")
			}
			return b.String()
		}
		before := holders(l)
		l.Close()

		old := oldschema.Version9
		if f.url != "" {
			old = oldschema.Postgres7
		}
		raw := open() // as the tables' owner, to turn them back
		db := pgtest.Open(t, raw.Source())
		for _, q := range old {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var held, shared int
		if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM locks WHERE held = 1), (SELECT count(*) FROM lock_holders)`).Scan(&held, &shared); err != nil || held != 1 || shared != 2 {
			t.Fatalf("the old schema: %d held locks rows, %d lock_holders rows (%v); want 1 and 2", held, shared, err)
		}
		raw.Close()

		l = open()
		var exclusive int
		if err := pgtest.Open(t, l.Source()).QueryRowContext(ctx, `SELECT count(*) FROM lock_holders
			WHERE exclusive = 1 AND lock_name = 'x' AND request_id = 'rx' AND slot_limit = 1`).Scan(&exclusive); err != nil || exclusive != 1 {
			t.Fatalf("x's exclusive holder in lock_holders: %d rows (%v), want 1", exclusive, err)
		}
		verifyOK(t, l)
		if after := holders(l); after != before {
			t.Errorf("status after the migration:\n%s\nbefore:\n%s", after, before)
		}
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: as("other"), TTL: time.Hour}); err == nil {
			t.Error("another request took x from its live holder")
		}
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "pool", Identity: as("r3"), TTL: time.Hour, Limit: 2}); err == nil {
			t.Error("a third request took a slot of the full semaphore")
		}
		if _, err := l.Heartbeat(ctx, "x", me("rx")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "x", Identity: me("rx")}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "x", Identity: me("next"), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		verifyOK(t, l)
	})
}
