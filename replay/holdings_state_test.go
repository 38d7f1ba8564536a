package replay_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// TestHoldingFoldKept: a holding fold kept (MarshalJSON) at any seq of a
// mixed log and read back (UnmarshalJSON), then given the rest of the log,
// ends in the state of the fold of the whole log: every lock (holders,
// claims, queue, last event), the anomalies, the open holdings, and the
// holdings that close after it.
func TestHoldingFoldKept(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	if _, _, err := (fixture.Ledger{Events: 2000, Locks: 9, Start: start, Span: 24 * time.Hour}).WriteEvents(root); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type closed struct {
		lock     string
		opened   int64
		ended    int64
		shared   bool
		openedAt time.Time
	}
	fold := func(f *replay.HoldingFold, from, to int64, out *[]closed) {
		t.Helper()
		err := replay.Scan(ctx, db, replay.Filter{FromSeq: from, ToSeq: to}, func(ev *replay.Event) error {
			f.Apply(ev)
			for _, h := range f.Closed {
				*out = append(*out, closed{h.Lock, h.Opened.Seq, h.Ended.Seq, h.Shared, h.Opened.Time})
			}
			f.Closed = f.Closed[:0]
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	whole := replay.NewHoldingFold()
	var wholeClosed []closed
	fold(whole, 1, 0, &wholeClosed)
	for _, at := range []int64{1, 100, 999, 1999, 2000} {
		f := replay.NewHoldingFold()
		var got []closed
		fold(f, 1, at, &got)
		b, err := f.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		g := replay.NewHoldingFold()
		if err := g.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		fold(g, at+1, 0, &got)
		if !reflect.DeepEqual(g.State().Locks(), whole.State().Locks()) {
			t.Errorf("kept at %d: the locks differ from the whole fold's", at)
		}
		gs, ws := *g.State(), *whole.State()
		if gs.Seq != ws.Seq || gs.Events != ws.Events || gs.AnomalyCount != ws.AnomalyCount || !reflect.DeepEqual(gs.Anomalies, ws.Anomalies) {
			t.Errorf("kept at %d: seq %d, %d events, %d anomalies; want %d, %d, %d", at, gs.Seq, gs.Events, gs.AnomalyCount, ws.Seq, ws.Events, ws.AnomalyCount)
		}
		if !reflect.DeepEqual(got, wholeClosed) {
			t.Errorf("kept at %d: %d holdings closed, want %d (or they differ)", at, len(got), len(wholeClosed))
		}
		if len(g.Open()) != len(whole.Open()) {
			t.Errorf("kept at %d: %d open holdings, want %d", at, len(g.Open()), len(whole.Open()))
		}
	}
	// A queue (the fixture has no waiters that queue).
	c := testclock.New(start)
	l := openScripted(t, t.TempDir(), c, nil)
	id := func(rid string) ledger.Identity { return ledger.Identity{RequestID: rid, Actor: "alice", PID: 7} }
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: id("r1"), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, rid := range []string{"w1", "w2"} {
		c.Add(time.Second)
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: id(rid), TTL: time.Hour, Waiting: true, WaitLeft: time.Minute}); err == nil {
			t.Fatal("a held lock was given")
		}
	}
	tx, err := l.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	kept := replay.NewHoldingFold()
	if err := replay.Scan(ctx, tx, replay.Filter{}, func(ev *replay.Event) error { kept.Apply(ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if n := len(kept.State().Lock("q").Queued); n != 2 {
		t.Fatalf("%d queued, want 2", n)
	}
	b, err := kept.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	g := replay.NewHoldingFold()
	if err := g.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.State().Locks(), kept.State().Locks()) {
		t.Errorf("a lock with a queue, kept: %+v\nwant %+v", g.State().Lock("q"), kept.State().Lock("q"))
	}

	k := replay.NewHoldingFold()
	k.KeepOverlaps()
	if _, err := k.MarshalJSON(); err == nil {
		t.Error("a fold that keeps its overlaps was kept")
	}
}
