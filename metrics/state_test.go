package metrics

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fullFold folds the whole log q reads.
func fullFold(t *testing.T, q replay.Querier) *Fold {
	t.Helper()
	f := NewFold()
	if err := f.Update(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	return f
}

// kept is f written to a state file and read back, as the next run reads it.
func kept(t *testing.T, f *Fold, id string) *Fold {
	t.Helper()
	b, err := f.MarshalState(id)
	if err != nil {
		t.Fatal(err)
	}
	g, err := UnmarshalState(b, id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// sameFold fails unless got and want are the same fold: the same state
// kept and the same exposition.
func sameFold(t *testing.T, what string, got, want *Fold, now time.Time) {
	t.Helper()
	gb, err := got.MarshalState("x")
	if err != nil {
		t.Fatal(err)
	}
	wb, err := want.MarshalState("x")
	if err != nil {
		t.Fatal(err)
	}
	if string(gb) != string(wb) {
		t.Errorf("%s: kept state differs from the full fold's:\n%s\nwant:\n%s", what, gb, wb)
	}
	_, g := scrape(t, got, now)
	_, w := scrape(t, want, now)
	if g != w {
		t.Errorf("%s: metrics differ from the full fold's:\n%s\nwant:\n%s", what, g, w)
	}
}

// TestKeptStateContinuesAsTheFullFold: a fold kept at any seq of a mixed
// log (acquisitions, heartbeats, waiters, releases, stale steals over many
// locks), read back and updated with the rest, is the fold of the whole
// log.
func TestKeptStateContinuesAsTheFullFold(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	if _, _, err := (fixture.Ledger{Events: 3000, Locks: 12, Start: start, Span: 48 * time.Hour}).WriteEvents(root); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	full := fullFold(t, db)
	now := start.Add(49 * time.Hour)
	for _, at := range []int64{1, 2, 17, 500, 1499, 2998, 2999, 3000} {
		f := NewFold()
		err := replay.Scan(ctx, db, replay.Filter{ToSeq: at}, func(ev *replay.Event) error {
			f.Apply(ev)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		g := kept(t, f, "x")
		if err := g.Update(ctx, db); err != nil {
			t.Fatal(err)
		}
		sameFold(t, "kept at seq "+itoa(at), g, full, now)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// scenario writes one round of every kind of event metrics counts, on
// locks of round's own and on shared ones.
func scenario(t *testing.T, l *ledger.Ledger, c *testclock.Clock, round string) {
	t.Helper()
	ctx := context.Background()
	id := func(rid string) ledger.Identity {
		return ledger.Identity{RequestID: round + "-" + rid, Actor: "alice", PID: 4242}
	}
	ok := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	refused := func(_ any, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("want a refusal")
		}
	}
	ok(l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "a", Identity: id("r1"), TTL: time.Minute}))
	c.Add(2 * time.Second)
	ok(l.Renew(ctx, ledger.RenewRequest{Lock: "a", Identity: id("r1")}))
	refused(l.Release(ctx, ledger.ReleaseRequest{Lock: "a", Identity: id("other")}))
	blocked, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "a", Identity: id("w"), TTL: time.Minute, Waited: 3 * time.Second})
	if err == nil {
		t.Fatalf("acquire of a held lock: %+v", blocked)
	}
	c.Add(90 * time.Second)
	ok(l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "a", Identity: id("r2"), TTL: time.Hour}, Active: true}))
	c.Add(time.Second)
	if err := l.RecordHeartbeatFailure(ctx, "a", id("r1"), 3, "gone", true); err != nil {
		t.Fatal(err)
	}
	ok(l.Release(ctx, ledger.ReleaseRequest{Lock: "a", Identity: id("r2")}))
	for _, rid := range []string{"s1", "s2"} {
		ok(l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "sem", Identity: id(rid), TTL: time.Hour, Shared: true, Limit: 2}))
	}
	c.Add(5 * time.Second)
	ok(l.Release(ctx, ledger.ReleaseRequest{Lock: "sem", Identity: id("s1")}))
	ok(l.Release(ctx, ledger.ReleaseRequest{Lock: "sem", Identity: id("s2")}))
	ok(l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "held-" + round, Identity: id("h"), TTL: time.Hour}))
	c.Add(time.Second)
}

// keptEqualsFull runs rounds of the scenario on l and checks, after each,
// that the state kept after the round before, updated, is the full fold;
// a fold restarted (the state deleted) is too.
func keptEqualsFull(t *testing.T, l *ledger.Ledger, c *testclock.Clock) {
	ctx := context.Background()
	read := func() *sql.Tx {
		tx, err := l.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback() })
		return tx
	}
	var state []byte
	for _, round := range []string{"one", "two", "three"} {
		scenario(t, l, c, round)
		tx := read()
		f := NewFold()
		if state != nil {
			var err error
			if f, err = UnmarshalState(state, l.ID()); err != nil {
				t.Fatal(err)
			}
			if err := f.Follows(ctx, tx); err != nil {
				t.Fatalf("round %s: %v", round, err)
			}
		}
		before := f.Seq()
		if err := f.Update(ctx, tx); err != nil {
			t.Fatal(err)
		}
		if state != nil && before == 0 {
			t.Fatalf("round %s: the kept state was not used", round)
		}
		sameFold(t, "round "+round, f, fullFold(t, tx), c.Now())
		var err error
		if state, err = f.MarshalState(l.ID()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := UnmarshalState(state, "another-ledger"); !errors.As(err, new(*StaleStateError)) {
		t.Errorf("a state of another ledger: %v, want a StaleStateError", err)
	}
}

func TestKeptStateEqualsFullSQLite(t *testing.T) {
	c := testclock.New(time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC))
	l, _ := openLedger(t, t.TempDir(), c)
	keptEqualsFull(t, l, c)
}

func TestKeptStateEqualsFullPostgres(t *testing.T) {
	c := testclock.New(time.Now().UTC().Truncate(time.Second))
	l := fixture.OpenPostgres(t, pgtest.NewDatabase(t), ledger.WithClock(c.Now),
		ledger.WithHost(ledger.Host{ID: "host-a", BootID: "boot-1"}), ledger.WithProcessProbe(alive{}))
	keptEqualsFull(t, l, c)
}

// TestStateNotThisLog: a state file the log does not hold is not used, and
// says why: one kept ahead of a database restored from an older copy, one
// whose event at its seq was rewritten, one of another ledger, and one in
// another form. A missing one is no state and no error.
func TestStateNotThisLog(t *testing.T) {
	ctx := context.Background()
	c := testclock.New(time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC))
	root := t.TempDir()
	l, db := openLedger(t, root, c)
	scenario(t, l, c, "one")
	// The older copy a restore would bring back.
	backup := filepath.Join(t.TempDir(), "backup.db")
	copyDB(t, db, backup)
	scenario(t, l, c, "two")
	path := filepath.Join(t.TempDir(), "state.json")
	if f, err := LoadState(ctx, db, path, l.ID()); f != nil || err != nil {
		t.Fatalf("no state file: %v, %v", f, err)
	}
	f := fullFold(t, db)
	b, err := f.MarshalState(l.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if g, err := LoadState(ctx, db, path, l.ID()); err != nil || g.Seq() != f.Seq() {
		t.Fatalf("this log's state: %v, %v", g, err)
	}

	stale := func(what string, q replay.Querier, id string) {
		t.Helper()
		g, err := LoadState(ctx, q, path, id)
		var se *StaleStateError
		if !errors.As(err, &se) || g != nil {
			t.Errorf("%s: %v, %v; want a StaleStateError", what, g, err)
		} else {
			t.Logf("%s: %s", what, se.Reason)
		}
	}
	restored, err := sql.Open("sqlite", "file:"+backup+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	stale("a database restored from an older copy", restored, l.ID())
	stale("another ledger", db, "another-ledger")

	other, otherDB := openLedger(t, t.TempDir(), c)
	for range 3 {
		scenario(t, other, c, "x"+itoa(int64(c.Now().Unix()%1000)))
	}
	stale("another log with an event at the state's seq", otherDB, l.ID())

	if err := os.WriteFile(path, []byte(`{"version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stale("another form", db, l.ID())
}

func copyDB(t *testing.T, db *sql.DB, to string) {
	t.Helper()
	if _, err := db.Exec(`VACUUM INTO ?`, to); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(to); err != nil {
		t.Fatal(err)
	}
}
