package ledger

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lockledger/lockledger/store"
)

// maxGroup bounds the decisions one transaction takes.
const maxGroup = 64

// pendingWrite is one caller's decision, made alone (update) or in a group.
type pendingWrite struct {
	ctx  context.Context
	name string // the lock of a write ("" for update)
	fn   func(w *writeTx) (outcome error, err error)
	// outcome and err are fn's (err also the scaffold's); done is closed
	// once they are final.
	outcome, err error
	done         chan struct{}
	// lead is closed when the decision's caller is handed the lead of the
	// queue (see writeQueue); leads says so under the queue's mutex.
	lead  chan struct{}
	leads bool
	// alone: fn changed files another lock's decision may change too; it
	// is made again in a transaction of its own.
	alone bool
	w     *writeTx
}

func (d *pendingWrite) result() error {
	if d.err != nil {
		return d.err
	}
	return d.outcome
}

// writeQueue groups the decisions on distinct locks that this process's
// clients ask for at once: the client at the head of the queue leads,
// takes every waiting decision on a lock not already taken (up to
// maxGroup), makes them one after the other in one write transaction,
// each in a savepoint of its own, commits them together, and hands the
// lead to the next waiting client. All the grouped decisions then pay for
// one pass through the writer mutex and the store's serialisation point,
// and one durable commit (one fsync), where they would pay one each: the
// serialisation point is held across the commit's flush, so without
// groups no two decisions ever share one. Each decision still reads what
// the ones before it in the group wrote, so the chain and the decisions
// are those of the same decisions made one at a time in that order.
type writeQueue struct {
	mu      sync.Mutex
	waiting []*pendingWrite
	leading bool // a client leads; no waiting decision means no leader
}

// queued makes fn, a decision on lock name, through the queue.
func (l *Ledger) queued(ctx context.Context, name string, fn func(w *writeTx) (error, error)) error {
	d := &pendingWrite{ctx: ctx, name: name, fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	q := &l.writes
	q.mu.Lock()
	q.waiting = append(q.waiting, d)
	leader := !q.leading
	q.leading = true
	q.mu.Unlock()
	if !leader {
		select {
		case <-d.done:
			return d.result()
		case <-d.lead:
		case <-ctx.Done():
			q.mu.Lock()
			if i := slices.Index(q.waiting, d); i >= 0 && !d.leads {
				q.waiting = slices.Delete(q.waiting, i, i+1)
				q.mu.Unlock()
				return ctx.Err()
			}
			q.mu.Unlock()
			// Taken into a group already, or handed the lead.
			select {
			case <-d.done:
				return d.result()
			case <-d.lead:
			}
		}
	}
	l.leadGroup(d)
	<-d.done
	return d.result()
}

// leadGroup makes the next group of the queue, lead's the first of it,
// and hands the lead on to the first decision left waiting, if any. The
// group is taken once the writer mutex and the store's serialisation point
// are held, so that it holds every decision that queued while lead waited
// for them; until then the wait is lead's alone, on lead's context.
func (l *Ledger) leadGroup(lead *pendingWrite) {
	q := &l.writes
	// The group's transaction lasts while any of its decisions is still
	// wanted: its context ends once every caller's has.
	ctx, cancel := context.WithCancel(context.WithoutCancel(lead.ctx))
	var left atomic.Int32
	left.Store(1)
	release := func() {
		if left.Add(-1) == 0 {
			cancel()
		}
	}
	stops := []func() bool{context.AfterFunc(lead.ctx, release)}
	var group []*pendingWrite
	take := func() []*pendingWrite {
		q.mu.Lock()
		group = []*pendingWrite{lead}
		names := map[string]bool{lead.name: true}
		rest := q.waiting[:0:0]
		for _, d := range q.waiting {
			switch {
			case d == lead:
			case len(group) < maxGroup && !names[d.name]:
				names[d.name] = true
				group = append(group, d)
			default:
				rest = append(rest, d)
			}
		}
		q.waiting = rest
		q.mu.Unlock()
		left.Add(int32(len(group) - 1))
		for _, d := range group[1:] {
			stops = append(stops, context.AfterFunc(d.ctx, release))
		}
		return group
	}
	err := l.decideGroup(ctx, take)
	for _, s := range stops {
		s()
	}
	cancel()
	if group == nil {
		// Refused before the group was taken (the writer mutex or the
		// serialisation point not had): lead alone failed.
		q.mu.Lock()
		if i := slices.Index(q.waiting, lead); i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
		}
		q.mu.Unlock()
		lead.err = err
		group = []*pendingWrite{lead}
	}
	for _, d := range group {
		if d.alone {
			// Made again on its own, its files changed by no other decision
			// of its transaction.
			d.alone, d.err, d.outcome = false, nil, nil
			if err := l.decideGroup(d.ctx, func() []*pendingWrite { return []*pendingWrite{d} }); err != nil {
				d.err = err
			}
		}
		close(d.done)
	}

	q.mu.Lock()
	if len(q.waiting) > 0 {
		next := q.waiting[0]
		next.leads = true
		close(next.lead)
	} else {
		q.leading = false
	}
	q.mu.Unlock()
}

// decideGroup is the write scaffold: the writer mutex, a write transaction
// begun at the store's serialisation point, the decisions' clock, the
// group of decisions take gives then (take is not called when the mutex
// or the transaction is not had: the error is then the caller's), each
// decision's fn (in a savepoint of its own when there are several), the
// checkpoint then due, the commit (when any fn wrote anything), and the
// checkpoint published to the witnesses once the mutex is let go, so that a
// slow or hung witness holds up no writer. A decision whose caller's
// context ended before its turn is not made.
func (l *Ledger) decideGroup(ctx context.Context, take func() []*pendingWrite) error {
	fail := func(ds []*pendingWrite, err error) {
		for _, d := range ds {
			if d.err == nil {
				d.err, d.outcome = err, nil
			}
		}
	}
	unlock, err := l.lockWriter(ctx)
	if err != nil {
		return err
	}
	var cp *Checkpointed
	defer func() {
		unlock()
		l.publishQuietly(ctx, cp)
	}()
	tx, now, err := l.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	group := take()
	q := l.stmts.In(tx)
	several := len(group) > 1
	var made []*pendingWrite // decisions whose writes stand in tx
	for _, d := range group {
		if err := d.ctx.Err(); err != nil {
			d.err = err
			continue
		}
		if several {
			if err := store.Savepoint(ctx, q); err != nil {
				fail(group, err)
				abortAll(made)
				return nil
			}
		}
		w := &writeTx{l: l, ctx: ctx, tx: tx, q: q, now: now, v: &view{}}
		d.outcome, d.err = d.fn(w)
		if several && d.err == nil && w.alone {
			d.alone = true
		}
		if d.err != nil || d.alone {
			w.abort()
			if several {
				if err := store.RollbackToSavepoint(ctx, q); err != nil {
					fail(group, err)
					abortAll(made)
					return nil
				}
			}
			continue
		}
		if several {
			if err := store.ReleaseSavepoint(ctx, q); err != nil {
				fail(group, err)
				w.abort()
				abortAll(made)
				return nil
			}
		}
		if len(w.written) > 0 || w.touched || w.rows {
			d.w = w
			made = append(made, d)
		}
	}
	if len(made) == 0 {
		return nil
	}
	last := made[len(made)-1].w
	var seq int64
	var journals []*os.File
	wrote, unsigned, mustSign := false, false, false
	for _, d := range made {
		if len(d.w.written) > 0 {
			wrote = true
			seq = d.w.seq
		}
		unsigned = unsigned || d.w.unsigned
		mustSign = mustSign || d.w.mustSign
		journals = append(journals, d.w.journals...)
		d.w.journals = nil
	}
	undo := func(err error) {
		fail(made, err)
		abortAll(made)
	}
	if mustSign {
		if cp, err = l.signCheckpoint(ctx, q, seq, last.now, true, true); err != nil {
			undo(err)
			closeAll(journals)
			return nil
		}
	} else if wrote && !unsigned {
		// A checkpoint that cannot be made leaves the decisions standing:
		// the next write tries again, and verify says what is uncovered.
		// A log that no longer extends what was signed takes nothing more.
		if cp, err = l.dueCheckpoint(ctx, q, seq, now); notExtended(err) {
			undo(err)
			closeAll(journals)
			return nil
		} else if err != nil {
			l.log.Warn("could not sign a checkpoint", "seq", seq, "err", err)
			cp = nil
		}
	}
	for _, d := range made {
		if len(d.w.written) > 0 || d.w.rows {
			// A write of no lock (export, verify, a checkpoint) notifies
			// too, with no lock's name: followers of the log wake on every
			// append.
			if err := l.store.Changed(ctx, q, d.w.wakes()); err != nil {
				cp = nil // signed for a log that does not commit: kept, it would refuse every later writer
				undo(fmt.Errorf("ledger: notify: %w", err))
				closeAll(journals)
				return nil
			}
		}
	}
	if err := l.commitWith(tx, journals); err != nil {
		cp = nil
		undo(fmt.Errorf("ledger: commit: %w", err))
		return nil
	}
	for _, d := range made {
		w := d.w
		var finished error
		if w.committed != nil {
			finished = w.committed()
		}
		for _, remove := range w.removals {
			if err := remove(); err != nil {
				l.log.Warn("could not remove a lock file after the commit; the next writer or project will", "lock", w.v.name, "err", err)
			}
		}
		if d.outcome == nil {
			d.err = finished
		}
	}
	return nil
}

// abortAll undoes what the decisions changed outside the database.
func abortAll(ds []*pendingWrite) {
	for _, d := range ds {
		if d.w != nil {
			d.w.abort()
		}
	}
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
