package replay

import (
	"context"
	"errors"
	"time"

	"github.com/lockledger/lockledger/store"
)

// AsOf folds every event with at <= t (every event when t is zero) in seq
// order; with lock set, only that lock's events, and of the State only
// that Lock is the whole fold's (Events, Seq and Anomalies may count less).
// The fold starts from the newest snapshot it can trust whose events are
// all at or before t (see nearestSnapshot), else from the first event; the
// events after it are walked in seq order up to the last event at or
// before t (see store.Filter), holding one Lock per lock name and nothing
// per event: the rows are read ahead on a goroutine of their own (see
// readAhead) while this one decodes each body into one reused Event and
// folds it. While it runs, the garbage collector's target is raised (see
// relaxGC).
func AsOf(ctx context.Context, q Querier, t time.Time, lock string) (*State, error) {
	defer relaxGC(foldGCPercent)()
	st, f, err := startAt(ctx, q, t, t, lock)
	if err != nil {
		return nil, err
	}
	ev := &Event{}
	err = readAhead(ctx, q, f, func(r *store.BodyRow) error { return st.applyRow(ev, r) })
	if err != nil {
		return nil, err
	}
	return st, nil
}

// applyRow decodes r into ev (reused from row to row) and folds it.
func (s *State) applyRow(ev *Event, r *store.BodyRow) error {
	*ev = Event{}
	if err := decodeStringInto(r.Seq, r.Body, ev); err != nil {
		return err
	}
	ev.Seq = r.Seq
	s.Apply(ev)
	return nil
}

// startAt is the state a fold of the events at or before until (of
// lock's, when set) starts from, and the filter of the events to fold
// after it: the newest snapshot it can trust whose events are all at or
// before from (see nearestSnapshot) and the events after it up to the
// last at or before until, or the state before any event and every event.
func startAt(ctx context.Context, q Querier, from, until time.Time, lock string) (*State, Filter, error) {
	f := Filter{Lock: lock, Until: until}
	first, to, ok, err := store.SeqRange(ctx, q, time.Time{}, until)
	if err != nil || !ok {
		return NewState(), f, err
	}
	st, _, found, err := nearestSnapshot(ctx, q, from, to, first)
	if err != nil || !found {
		return NewState(), f, err
	}
	if lock != "" {
		st.onlyLock(lock)
	}
	f.FromSeq, f.ToSeq = st.Seq+1, to
	return st, f, nil
}

// readAheadBatches is how many batches of rows the reader may be ahead.
const readAheadBatches = 4

// readAhead streams the rows f selects (seq and body only), in seq order,
// to fn on the caller's goroutine, while a goroutine of its own reads the
// next ones: the database's reads and the caller's work run side by side.
// At most readAheadBatches batches of pipelineBatch rows are in flight,
// and their slices are used again once fn has seen them, so memory stays
// bounded however long the log is. fn's error (ErrStop: none) ends the
// read, and readAhead returns once its goroutine has.
//
// It is a speed-only second copy of reading the rows in turn (what the
// build tag lockledger_noreadahead leaves), kept because `make bench`'s
// row "`replay --as-of T --json` on N events with replay's read-ahead vs
// one goroutine (tag lockledger_noreadahead)" (group copies,
// internal/cmd/bench/copies.go) shows the command at least 1.3x faster
// with it. Below 1.3x, it goes.
func readAhead(ctx context.Context, q Querier, f Filter, fn func(*store.BodyRow) error) error {
	if !readAheadOn {
		for r, err := range store.Bodies(ctx, q, f) {
			if err == nil {
				err = fn(r)
			}
			if errors.Is(err, ErrStop) {
				return nil
			} else if err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []store.BodyRow, readAheadBatches)
	// Every batch slice in flight, plus the one being filled and the one
	// being consumed, fits here: the reader never waits on it.
	spare := make(chan []store.BodyRow, readAheadBatches+2)
	var readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(batches)
		fresh := func() []store.BodyRow {
			select {
			case b := <-spare:
				return b[:0]
			default:
				return make([]store.BodyRow, 0, pipelineBatch)
			}
		}
		cur := fresh()
		for r, err := range store.Bodies(ctx, q, f) {
			if readErr = err; err != nil {
				return
			}
			if cur = append(cur, *r); len(cur) < pipelineBatch {
				continue
			}
			select {
			case batches <- cur:
				cur = fresh()
			case <-ctx.Done():
				return
			}
		}
		if len(cur) > 0 {
			select {
			case batches <- cur:
			case <-ctx.Done():
			}
		}
	}()
	stopped, err := consume(batches, spare, fn)
	cancel()
	<-done
	switch {
	case err != nil:
		return err
	case stopped:
		return nil
	case readErr != nil:
		return readErr
	}
	return parent.Err()
}

// consume hands every row of every batch to fn until fn fails, and each
// batch it is done with to spare; ErrStop stops it without an error.
func consume(batches <-chan []store.BodyRow, spare chan<- []store.BodyRow, fn func(*store.BodyRow) error) (stopped bool, err error) {
	for b := range batches {
		for i := range b {
			if err := fn(&b[i]); err != nil {
				if errors.Is(err, ErrStop) {
					return true, nil
				}
				return false, err
			}
		}
		spare <- b
	}
	return false, nil
}
