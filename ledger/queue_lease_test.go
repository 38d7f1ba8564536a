package ledger_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// placeRecords is the acquire_blocked events with until (a waiter's
// records of its place) of request rid on lock, in seq order.
func placeRecords(t *testing.T, l *ledger.Ledger, lock, rid string) []*replay.Event {
	t.Helper()
	var out []*replay.Event
	if err := replay.Scan(context.Background(), pgtest.Open(t, l.Source()), replay.Filter{Lock: lock}, func(ev *replay.Event) error {
		if ev.Type == events.AcquireBlocked && ev.Until != "" && ev.RequestID == rid {
			cp := *ev
			out = append(out, &cp)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A waiter's place is a lease of events.WaiterTTL: it keeps its place by
// renewing it (an attempt at least a sixth of the TTL after its last record
// renews it, naming the record it joined with; one sooner records
// nothing), and loses it when it does not, even on another host where no
// probe can tell that its process died. A waiter whose place lapsed joins
// again at the back. Replay (who) sees the same queue.
func TestQueuePlaceIsALeaseRenewedByItsWaiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	clock := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	open := func(host string) *ledger.Ledger {
		l, err := ledger.Open(ctx, root, ledger.WithClock(clock.Now), ledger.WithHost(ledger.Host{ID: host, BootID: "boot-" + host}), ledger.Unsigned())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	here, far := open("host-a"), open("host-b")
	if _, err := here.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: as("holder"), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	attempt := func(l *ledger.Ledger, rid string) error {
		t.Helper()
		_, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: as(rid), TTL: time.Hour, Waiting: true, WaitLeft: time.Hour})
		return err
	}
	for _, w := range []struct {
		l   *ledger.Ledger
		rid string
	}{{far, "far"}, {here, "b"}, {here, "c"}} {
		if err := attempt(w.l, w.rid); !errors.Is(err, ledger.ErrHeld) {
			t.Fatalf("%s: got %v, want held", w.rid, err)
		}
	}
	if got, want := queuedIDs(t, here, "q"), []string{"far", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("queue: got %v, want %v", got, want)
	}
	joined := placeRecords(t, here, "q", "b")
	if len(joined) != 1 {
		t.Fatalf("b's records of its place: %d, want 1", len(joined))
	}
	if until, _ := events.ParseTime(joined[0].Until); until.Sub(joined[0].Time) != events.WaiterTTL {
		t.Errorf("b's place lasts until %s from %s, want WaiterTTL (%s) for a wait of an hour", joined[0].Until, joined[0].At, events.WaiterTTL)
	}

	// b and c renew their places; far's waiter does not (it died).
	for _, step := range []time.Duration{events.WaiterTTL / 5, events.WaiterTTL / 5, events.WaiterTTL / 5, events.WaiterTTL / 5} {
		clock.Add(step)
		for _, rid := range []string{"b", "c"} {
			if err := attempt(here, rid); !errors.Is(err, ledger.ErrHeld) {
				t.Fatalf("%s renewing: got %v, want held", rid, err)
			}
			if err := attempt(here, rid); !errors.Is(err, ledger.ErrHeld) { // too soon: records nothing
				t.Fatalf("%s again: got %v, want held", rid, err)
			}
		}
	}
	recs := placeRecords(t, here, "q", "b")
	if len(recs) != 5 {
		t.Fatalf("b's records of its place: %d, want the join and 4 renewals", len(recs))
	}
	for _, r := range recs[1:] {
		if r.QueuedSeq != joined[0].Seq || r.QueuedAt != joined[0].At {
			t.Errorf("b's renewal seq %d names the place (%d, %s), want its join (%d, %s)", r.Seq, r.QueuedSeq, r.QueuedAt, joined[0].Seq, joined[0].At)
		}
	}
	// 4/5 of WaiterTTL after it joined, far's waiter is still first...
	if got, want := queuedIDs(t, here, "q"), []string{"far", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("queue before far's place lapses: got %v, want %v", got, want)
	}
	// ...and gone once WaiterTTL has passed without a renewal; b and c
	// keep the places they joined with.
	clock.Add(events.WaiterTTL / 5)
	q, err := here.Queue(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 2 || q[0].RequestID != "b" || q[1].RequestID != "c" || q[0].Seq != joined[0].Seq || !q[0].Since.Equal(joined[0].Time) {
		t.Fatalf("queue after far's place lapsed: got %+v, want b (joined at seq %d) then c", q, joined[0].Seq)
	}
	st, err := replay.AsOf(ctx, pgtest.Open(t, here.Source()), clock.Now(), "q")
	if err != nil {
		t.Fatal(err)
	}
	var folded []string
	for _, w := range st.Lock("q").QueueAt(clock.Now()) {
		folded = append(folded, w.RequestID)
	}
	if !slices.Equal(folded, []string{"b", "c"}) {
		t.Errorf("replay's queue: got %v, want [b c]", folded)
	}

	// far's waiter, alive after all, comes back: it joins at the back.
	if err := attempt(far, "far"); !errors.Is(err, ledger.ErrHeld) {
		t.Fatal(err)
	}
	if got, want := queuedIDs(t, here, "q"), []string{"b", "c", "far"}; !slices.Equal(got, want) {
		t.Fatalf("queue after far rejoined: got %v, want %v", got, want)
	}
	if r := placeRecords(t, here, "q", "far"); len(r) != 2 || r[1].QueuedSeq != 0 {
		t.Fatalf("far's records: %d, the last naming place %d, want a second join", len(r), r[len(r)-1].QueuedSeq)
	}

	// The lock freed, it goes to b, the head; c is refused by the queue.
	if _, err := here.Release(ctx, ledger.ReleaseRequest{Lock: "q", Identity: as("holder")}); err != nil {
		t.Fatal(err)
	}
	var held *ledger.HeldError
	if err := attempt(here, "c"); !errors.As(err, &held) || len(held.Queue) != 1 || held.Queue[0].RequestID != "b" {
		t.Fatalf("c on the free lock: got %v, want held by b", err)
	}
	if err := attempt(here, "b"); err != nil {
		t.Fatalf("b, the head: %v", err)
	}
	verifyOK(t, here)
}
