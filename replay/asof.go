package replay

import (
	"context"
	"database/sql"
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
	err := readAhead(ctx, q, Filter{Lock: lock, Until: t}, func(r *foldRow) error {
		*ev = Event{}
		if err := decodeStringInto(r.seq, r.body, ev); err != nil {
			return err
		}
		ev.Seq = r.seq
		st.Apply(ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// foldRow is what a fold reads of a row. The body is a string: the driver
// hands a text column over in a string of its own, which database/sql
// passes on without the copy it makes of a byte slice, and which the
// fold's strings may share for as long as they live.
type foldRow struct {
	seq  int64
	body string
}

// foldCols are the columns a fold reads: the chain links are verify's.
// The body is concatenated with an empty string: in SQLite that makes it
// text with the same bytes, NULs included, as the ledger's database is
// UTF-8 (store/sqlite opens no other); in PostgreSQL it stays bytea, which
// database/sql copies into the string as before.
const foldCols = "seq, body || ''"

// readAheadBatches is how many batches of rows the reader may be ahead.
const readAheadBatches = 4

// readAhead streams the rows f selects (seq and body only), in seq order,
// to fn on the caller's goroutine, while a goroutine of its own reads the
// next ones: the database's reads and the caller's work run side by side.
// At most readAheadBatches batches of pipelineBatch rows are in flight,
// and their slices are used again once fn has seen them, so memory stays
// bounded however long the log is. fn's error (ErrStop: none) ends the
// read, and readAhead returns once its goroutine has.
func readAhead(ctx context.Context, q Querier, f Filter, fn func(*foldRow) error) error {
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
	batches := make(chan []foldRow, readAheadBatches)
	// Every batch slice in flight, plus the one being filled and the one
	// being consumed, fits here: the reader never waits on it.
	spare := make(chan []foldRow, readAheadBatches+2)
	var readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(batches)
		defer rows.Close()
		fresh := func() []foldRow {
			select {
			case b := <-spare:
				return b[:0]
			default:
				return make([]foldRow, 0, pipelineBatch)
			}
		}
		cur := fresh()
		var body sql.NullString
		for rows.Next() {
			cur = cur[:len(cur)+1]
			r := &cur[len(cur)-1]
			if readErr = rows.Scan(&r.seq, &body); readErr != nil {
				return
			}
			r.body = body.String // NULL: "", which does not decode
			if len(cur) < pipelineBatch {
				continue
			}
			select {
			case batches <- cur:
				cur = fresh()
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
func consume(batches <-chan []foldRow, spare chan<- []foldRow, fn func(*foldRow) error) (stopped bool, err error) {
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
