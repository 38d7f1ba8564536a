package replay

import (
	"context"
	"fmt"
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
		if f.shared[ev.LockName][id] == nil && ev.RequestID == id && (ev.Type == events.LockAcquired || ev.Type == events.LockStolen) {
			f.openShared(id, &Holding{Lock: ev.LockName, Opened: ev, Shared: true})
		}
	}
}

// openShared notes h, the open shared holding of request id.
func (f *HoldingFold) openShared(id string, h *Holding) {
	if f.shared[h.Lock] == nil {
		f.shared[h.Lock] = map[string]*Holding{}
	}
	f.shared[h.Lock][id] = h
}

// Open lists the holdings not ended, by opening seq.
func (f *HoldingFold) Open() []*Holding {
	out := slices.Collect(maps.Values(f.open))
	for _, m := range f.shared {
		out = slices.AppendSeq(out, maps.Values(m))
	}
	slices.SortFunc(out, func(a, b *Holding) int { return int(a.Opened.Seq - b.Opened.Seq) })
	return out
}

// Holdings returns, by opening seq, the holdings the fold of the log up to
// f.Until (of f.Lock's events when set) shows, that overlap [f.Since,
// f.Until] and whose opening event passes f's Actor and Types. The fold
// starts before f.Since whatever it is, so a holding begun before the
// window is known: from the newest snapshot it can trust whose events are
// all before f.Since (see holdingsFrom), else from the first event. One
// not ended by f.Until has no Ended.
func Holdings(ctx context.Context, q Querier, f Filter) ([]*Holding, error) {
	fold, scan, err := holdingsFrom(ctx, q, f)
	if err != nil {
		return nil, err
	}
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
	err = Scan(ctx, q, scan, func(ev *Event) error {
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

// holdingsFrom is the fold Holdings starts from and the events it folds
// after it: a snapshot's state, with the holdings open there opened by
// their acquiring events (each read by its seq), when a snapshot of
// events all before f.Since can be trusted (a holding that ended there
// ended before the window, so none is missed); else the fold before any
// event, and every event up to f.Until.
func holdingsFrom(ctx context.Context, q Querier, f Filter) (*HoldingFold, Filter, error) {
	fold := NewHoldingFold()
	if f.Since.IsZero() {
		return fold, Filter{Lock: f.Lock, Until: f.Until}, nil
	}
	st, scan, err := startAt(ctx, q, f.Since.Add(-time.Nanosecond), f.Until, f.Lock)
	if err != nil {
		return nil, scan, err
	}
	fold.st = st
	for _, l := range st.Locks() {
		if l.Held {
			ev, err := eventAt(ctx, q, l.Holder.Began.Seq)
			if err != nil {
				return nil, scan, err
			}
			fold.open[l.Name] = &Holding{Lock: l.Name, Opened: ev}
		}
		for _, h := range l.Shared {
			ev, err := eventAt(ctx, q, h.Began.Seq)
			if err != nil {
				return nil, scan, err
			}
			fold.openShared(h.Record.RequestID, &Holding{Lock: l.Name, Opened: ev, Shared: true})
		}
	}
	return fold, scan, nil
}

// eventAt reads the event at seq.
func eventAt(ctx context.Context, q Querier, seq int64) (*Event, error) {
	var out *Event
	err := Scan(ctx, q, Filter{FromSeq: seq, ToSeq: seq}, func(ev *Event) error {
		out = ev
		return ErrStop
	})
	if err == nil && out == nil {
		err = fmt.Errorf("replay: no event %d, which a snapshot names as a holding's beginning (run verify)", seq)
	}
	return out, err
}
