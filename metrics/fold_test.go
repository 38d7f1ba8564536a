package metrics

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

type alive struct{}

func (alive) Probe(int) (proc.Liveness, string) { return proc.Alive, "" }

func openLedger(t *testing.T, root string, c *testclock.Clock) (*ledger.Ledger, *sql.DB) {
	t.Helper()
	l := fixture.Open(t, root, ledger.WithClock(c.Now), ledger.WithHost(ledger.Host{ID: "host-a", BootID: "boot-1"}), ledger.WithProcessProbe(alive{}))
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return l, db
}

func scrape(t *testing.T, f *Fold, now time.Time) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	var b strings.Builder
	if err := Write(&b, Text, f.Families(now, nil)); err != nil {
		t.Fatal(err)
	}
	fams, err := parse(t, Text, b.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return fams, b.String()
}

func holdHistogram(t *testing.T, fams map[string]*dto.MetricFamily, lock string) *dto.Histogram {
	t.Helper()
	for _, m := range fams["lockledger_hold_seconds"].GetMetric() {
		if m.GetLabel()[0].GetValue() == lock {
			return m.GetHistogram()
		}
	}
	t.Fatalf("no hold histogram for %s", lock)
	return nil
}

// TestFoldAgreesWithHoldingsAndUpdates: the hold histogram observes
// exactly the holdings replay.Holdings (timeline's) shows ended, with
// their lengths; Update folds only the events appended since, to the same
// result as a fresh fold; and a fold whose last event is not the source's
// any more (another ledger behind it) starts again.
func TestFoldAgreesWithHoldingsAndUpdates(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	c := testclock.New(base)
	l, db := openLedger(t, t.TempDir(), c)
	id := func(rid string) ledger.Identity { return ledger.Identity{RequestID: rid, Actor: "alice", PID: 4242} }
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "a", Identity: id("r1"), TTL: time.Hour}))
	c.Add(3 * time.Second)
	must(l.Release(ctx, ledger.ReleaseRequest{Lock: "a", Identity: id("r1")}))

	f := NewFold()
	if err := f.Update(ctx, db); err != nil {
		t.Fatal(err)
	}
	fams, _ := scrape(t, f, c.Now())
	if h := holdHistogram(t, fams, "a"); h.GetSampleCount() != 1 || h.GetSampleSum() != 3 {
		t.Fatalf("hold of a: %v, want one of 3 s", h)
	}

	must(l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "a", Identity: id("r2"), TTL: time.Hour}))
	c.Add(40 * time.Second)
	must(l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "a", Identity: id("r3"), TTL: time.Hour}, Active: true}))
	c.Add(time.Second)
	must(l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "b", Identity: id("r4"), TTL: time.Hour}))
	if err := f.Update(ctx, db); err != nil {
		t.Fatal(err)
	}
	fresh := NewFold()
	if err := fresh.Update(ctx, db); err != nil {
		t.Fatal(err)
	}
	fams, updated := scrape(t, f, c.Now())
	if _, once := scrape(t, fresh, c.Now()); updated != once {
		t.Errorf("updated fold:\n%s\nfresh fold:\n%s", updated, once)
	}
	hs, err := replay.Holdings(ctx, db, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ended int
	var sum float64
	for _, h := range hs {
		if h.Lock == "a" && h.Ended != nil {
			ended++
			sum += h.Ended.Time.Sub(h.Opened.Time).Seconds()
		}
	}
	if h := holdHistogram(t, fams, "a"); h.GetSampleCount() != uint64(ended) || h.GetSampleSum() != sum || ended != 2 {
		t.Errorf("hold of a: %v, timeline's holdings: %d ended, %v s", h, ended, sum)
	}

	// Another ledger behind the same source, with an event at the fold's
	// last seq (5) that is not the one folded: the fold starts again.
	other, otherDB := openLedger(t, t.TempDir(), testclock.New(base))
	for _, lock := range []string{"x", "y", "z", "w", "v"} {
		must(other.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: id("o-" + lock), TTL: time.Hour}))
	}
	if err := f.Update(ctx, otherDB); err != nil {
		t.Fatal(err)
	}
	fresh = NewFold()
	if err := fresh.Update(ctx, otherDB); err != nil {
		t.Fatal(err)
	}
	_, swapped := scrape(t, f, c.Now())
	if _, once := scrape(t, fresh, c.Now()); swapped != once || strings.Contains(swapped, `lock="a"`) {
		t.Errorf("a fold moved to another ledger kept the first one's numbers:\n%s\nwant:\n%s", swapped, once)
	}
}
