package replay

import (
	"context"
	"errors"
	"time"
)

// AsOf folds every event with at <= t (every event when t is zero) in seq
// order; with lock set, only that lock's events (served by events_lock_at).
// The whole log up to t is walked in seq order up to the last event at or
// before t (see narrow), holding one Lock per lock name and nothing per
// event: the rows are read ahead on a goroutine of their own (see
// readAhead) while this one decodes each body into one reused Event and
// folds it. While it runs, the garbage collector's target is raised (see
// relaxGC).
func AsOf(ctx context.Context, q Querier, t time.Time, lock string) (*State, error) {
	defer relaxGC(foldGCPercent)()
	st := NewState()
	ev := &Event{}
	err := readAhead(ctx, q, Filter{Lock: lock, Until: t}, func(r *Row) error {
		*ev = Event{}
		if err := decodeInto(r.Seq, r.Body, ev); err != nil {
			return err
		}
		ev.Seq = r.Seq
		st.Apply(ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// foldCols are the columns a fold reads: the chain links are verify's.
const foldCols = "seq, body"

// readAheadBatches is how many batches of rows the reader may be ahead.
const readAheadBatches = 4

// readAhead streams the rows f selects (seq and body only), in seq order,
// to fn on the caller's goroutine, while a goroutine of its own reads the
// next ones: the database's reads and the caller's work run side by side.
// At most readAheadBatches batches of pipelineBatch rows are in flight, so
// memory stays bounded however long the log is. fn's error (ErrStop: none)
// ends the read, and readAhead returns once its goroutine has.
func readAhead(ctx context.Context, q Querier, f Filter, fn func(*Row) error) error {
	f, any, err := f.narrow(ctx, q)
	if err != nil || !any {
		return err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	query, args := f.query(foldCols)
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	batches := make(chan []Row, readAheadBatches)
	var readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(batches)
		defer rows.Close()
		cur := make([]Row, 0, pipelineBatch)
		for rows.Next() {
			cur = cur[:len(cur)+1]
			r := &cur[len(cur)-1]
			if readErr = rows.Scan(&r.Seq, &r.Body); readErr != nil {
				return
			}
			if len(cur) < pipelineBatch {
				continue
			}
			select {
			case batches <- cur:
				cur = make([]Row, 0, pipelineBatch)
			case <-ctx.Done():
				return
			}
		}
		if readErr = rows.Err(); readErr == nil && len(cur) > 0 {
			select {
			case batches <- cur:
			case <-ctx.Done():
			}
		}
	}()
	stopped, err := consume(batches, fn)
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

// consume hands every row of every batch to fn until fn fails; ErrStop
// stops it without an error.
func consume(batches <-chan []Row, fn func(*Row) error) (stopped bool, err error) {
	for b := range batches {
		for i := range b {
			if err := fn(&b[i]); err != nil {
				if errors.Is(err, ErrStop) {
					return true, nil
				}
				return false, err
			}
		}
	}
	return false, nil
}
