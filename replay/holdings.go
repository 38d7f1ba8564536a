package replay

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/lockledger/lockledger/events"
)

// Holding is one request's hold on a lock as the fold sees it: from the
// event that made it the holder to the event that ended it.
type Holding struct {
	Lock string
	// Opened is the lock_acquired or lock_stolen that made the holder.
	Opened *Event
	// Ended is the release or steal after which the fold no longer shows
	// this holder; nil while it still holds.
	Ended *Event
	// Shared marks one of several concurrent holders (a reader, or a
	// slot of a semaphore): shared holdings of a lock may overlap.
	Shared bool
}

// Start is when the holding began.
func (h *Holding) Start() time.Time { return h.Opened.Time }

// HoldingFold folds events like State and records each holding's span.
// It keeps the holdings that end, which makes it a tool for a window of the
// log (a timeline), not for the whole of a large one.
type HoldingFold struct {
	st     *State
	open   map[string]*Holding
	shared map[string]map[string]*Holding // lock -> request id -> open shared holding
	// Closed lists the holdings that ended, in the order they ended.
	Closed []*Holding
}

// NewHoldingFold starts before the first event.
func NewHoldingFold() *HoldingFold {
	return &HoldingFold{st: NewState(), open: map[string]*Holding{}, shared: map[string]map[string]*Holding{}}
}

// State is the fold so far.
func (f *HoldingFold) State() *State { return f.st }

// Apply folds one event (in seq order) and notes where a holding begins or
// ends. The holder is whatever State.Apply makes it: a holding ends when
// the lock goes free or another holder replaces it (a steal, or an
// overlapping acquisition, which State reports as an anomaly).
func (f *HoldingFold) Apply(ev *Event) {
	f.st.Apply(ev)
	if ev.Type.LedgerWide() {
		return
	}
	l := f.st.Lock(ev.LockName)
	prev := f.open[ev.LockName]
	replaced := l.Held && l.UpdatedSeq == ev.Seq && (ev.Type == events.LockAcquired || ev.Type == events.LockStolen)
	if prev != nil && (replaced || !l.Held) {
		prev.Ended = ev
		f.Closed = append(f.Closed, prev)
		delete(f.open, ev.LockName)
	}
	if replaced {
		f.open[ev.LockName] = &Holding{Lock: ev.LockName, Opened: ev}
	}
	f.applyShared(ev, l)
}

// applyShared ends the shared holdings of ev's lock that the fold no
// longer shows, and opens the ones ev made.
func (f *HoldingFold) applyShared(ev *Event, l *Lock) {
	open := f.shared[ev.LockName]
	if len(open) == 0 && len(l.Shared) == 0 {
		return
	}
	now := map[string]bool{}
	for _, h := range l.Shared {
		now[h.Record.RequestID] = true
	}
	for _, id := range slices.Sorted(maps.Keys(open)) {
		if !now[id] {
			open[id].Ended = ev
			f.Closed = append(f.Closed, open[id])
			delete(open, id)
		}
	}
	for _, h := range l.Shared {
		id := h.Record.RequestID
		if open[id] == nil && ev.RequestID == id && (ev.Type == events.LockAcquired || ev.Type == events.LockStolen) {
			if open == nil {
				open = map[string]*Holding{}
				f.shared[ev.LockName] = open
			}
			open[id] = &Holding{Lock: ev.LockName, Opened: ev, Shared: true}
		}
	}
}

// Open lists the holdings not ended, by opening seq.
func (f *HoldingFold) Open() []*Holding {
	out := make([]*Holding, 0, len(f.open))
	for _, h := range f.open {
		out = append(out, h)
	}
	for _, m := range f.shared {
		for _, h := range m {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b *Holding) int { return int(a.Opened.Seq - b.Opened.Seq) })
	return out
}

// Holdings returns, by opening seq, the holdings the fold of the log up to
// f.Until (of f.Lock's events when set) shows, that overlap [f.Since,
// f.Until] and whose opening event passes f's Actor and Types. The fold
// starts at seq 1 whatever f.Since, so a holding begun before the window
// is known; one not ended by f.Until has no Ended.
func Holdings(ctx context.Context, q Querier, f Filter) ([]*Holding, error) {
	fold := NewHoldingFold()
	kept := []*Holding{}
	keep := func(h *Holding) {
		if f.Actor != "" && h.Opened.Actor != f.Actor {
			return
		}
		if len(f.Types) > 0 && !slices.Contains(f.Types, h.Opened.Type) {
			return
		}
		if h.Ended != nil && !f.Since.IsZero() && h.Ended.Time.Before(f.Since) {
			return
		}
		kept = append(kept, h)
	}
	err := Scan(ctx, q, Filter{Lock: f.Lock, Until: f.Until}, func(ev *Event) error {
		fold.Apply(ev)
		// Ended holdings are judged as they end, so that the fold keeps
		// none of those before the window.
		for _, h := range fold.Closed {
			keep(h)
		}
		fold.Closed = fold.Closed[:0]
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, h := range fold.Open() {
		keep(h)
	}
	slices.SortFunc(kept, func(a, b *Holding) int { return int(a.Opened.Seq - b.Opened.Seq) })
	return kept, nil
}
