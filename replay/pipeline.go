package replay

import (
	"context"
	"runtime"
	"sync"
)

// pipelineBatch is how many rows travel together between the stages.
const pipelineBatch = 256

type checkBatch struct {
	idx  int
	rows []rowCheck // one allocation per batch, not per row
}

// pipeline runs verify's per-row work beside the database reads while
// keeping the order: produce emits rows (from one goroutine, as
// database/sql requires), workers precheck batches of them concurrently,
// and consume receives every row in the order produced, on the caller's
// goroutine. At most a few batches per worker are in flight, so memory
// stays bounded however long the log is. emit returns false when the
// pipeline is shutting down.
//
// The reads are the critical path (a profile of verify shows the
// producer's SQLite calls as the largest single cost), so the workers leave
// it a core: GOMAXPROCS-1 of them, at least one.
func pipeline(ctx context.Context, produce func(emit func(*Row) bool) error, consume func(*rowCheck)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	in := make(chan checkBatch, workers)
	out := make(chan checkBatch, workers)
	var produceErr error
	go func() {
		defer close(in)
		idx := 0
		cur := make([]rowCheck, 0, pipelineBatch)
		send := func() bool {
			select {
			case in <- checkBatch{idx: idx, rows: cur}:
				idx++
				cur = make([]rowCheck, 0, pipelineBatch)
				return true
			case <-ctx.Done():
				return false
			}
		}
		produceErr = produce(func(r *Row) bool {
			cur = cur[:len(cur)+1] // zeroed by make
			cur[len(cur)-1].row = r
			return len(cur) < pipelineBatch || send()
		})
		if len(cur) > 0 {
			send()
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			h := new(chainHasher)
			for b := range in {
				// The batch's events, in one allocation, made here rather
				// than by the producer, which is the pipeline's bottleneck.
				evs := make([]Event, len(b.rows))
				for i := range b.rows {
					b.rows[i].precheck(h, &evs[i])
				}
				select {
				case out <- b:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	waiting := map[int]checkBatch{}
	next := 0
	for b := range out {
		waiting[b.idx] = b
		for {
			nb, ok := waiting[next]
			if !ok {
				break
			}
			delete(waiting, next)
			next++
			for i := range nb.rows {
				consume(&nb.rows[i])
			}
		}
	}
	// out is closed: every worker is done, so the producer is too.
	if produceErr != nil {
		return produceErr
	}
	return ctx.Err()
}
