package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/backoff"
	"github.com/lockledger/lockledger/store"
)

// maxGroup bounds the decisions one transaction takes.
const maxGroup = 64

// errAlone refuses, in a group, a decision about to change a file that is
// not its lock's own (see writeQueue and writeTx.onlyOwnFiles).
var errAlone = errors.New("ledger: the decision changes another tool's files: it is made alone")

// pendingWrite is one caller's decision, made alone (update) or in a group.
type pendingWrite struct {
	ctx  context.Context
	name string // the lock of a write ("" for update)
	fn   func(w *writeTx) (outcome error, err error)
	// outcome and err are fn's (err also the scaffold's), panicked what fn
	// panicked with; done is closed once they are final.
	outcome, err error
	panicked     any
	done         chan struct{}
	// lead is closed when the decision's caller is handed the lead of the
	// queue (see writeQueue); leads says so under the queue's mutex.
	lead  chan struct{}
	leads bool
	w     *writeTx
	// blamed is set while one of the decision's closures runs outside fn
	// (see blame).
	blamed bool
}

// blame runs f, one of the decision's closures (its abort, its work after
// the commit): a panic in it is the decision's (see leadGroup).
func (d *pendingWrite) blame(f func()) {
	d.blamed = true
	f()
	d.blamed = false
}

// result is the decision's outcome for its caller; a panic of fn is
// raised again here, on the caller's own goroutine.
func (d *pendingWrite) result() error {
	if d.panicked != nil {
		panic(d.panicked)
	}
	if d.err != nil {
		return d.err
	}
	return d.outcome
}

// decide runs fn on w. A panic in fn fails this decision alone: its
// savepoint is rolled back like that of a decision that failed, the others
// stand, and the panic goes to its caller (result).
func (d *pendingWrite) decide(w *writeTx) {
	defer func() {
		if p := recover(); p != nil {
			d.panicked, d.err = p, fmt.Errorf("ledger: the decision on %q panicked: %v", d.name, p)
		}
	}()
	d.outcome, d.err = d.fn(w)
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
//
// Only decisions whose file changes are their own lock's files (each with
// a journal that the commit or the rollback settles), or none, share a
// transaction. One about to change anything else (a --file target, another
// tool's file it takes over or finds displacing its holder) is refused in
// a group before it changes it (errAlone) and made again alone once the
// group is settled, as before grouping: a rolled-back group could not put
// another tool's file back as it was.
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
			return l.remadeAlone(d)
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
				return l.remadeAlone(d)
			case <-d.lead:
			}
		}
	}
	l.leadGroup(d)
	<-d.done
	return l.remadeAlone(d)
}

// remadeAlone is the result of d, made: a decision refused in its group
// (errAlone) is made again alone here, on its caller's goroutine, once the
// group has answered every other member and handed the lead on, so that
// its remake holds up no one else.
func (l *Ledger) remadeAlone(d *pendingWrite) error {
	if errors.Is(d.err, errAlone) || errors.Is(d.err, errGroupRefused) {
		d.err, d.outcome = nil, nil
		if err := l.decideGroup(d.ctx, func() []*pendingWrite { return []*pendingWrite{d} }); err != nil {
			d.err = err
		}
	}
	return d.result()
}

// leadGroup makes the next group of the queue, lead's the first of it,
// and hands the lead on to the first decision left waiting, if any. The
// group is taken once the writer mutex and the store's serialisation point
// are held, so that it holds every decision that queued while lead waited
// for them. Until then the wait is lead's: its caller's cancel ends it,
// takes nothing, and the next waiting decision leads. Once taken, the
// group runs on while any of its callers is live: a decision whose caller
// is gone before its turn is dropped, one whose caller goes during it is
// made, as a caller gone after a commit would find it. Once every caller
// is gone the group's context ends, so that a hung connection (which the
// server's busy timeout never ends) holds no one.
//
// Whatever happens, a panic too, every member is answered and the lead
// handed on: a member left unanswered, or a queue led by no one, would
// hold every later writer of the process. A panic fails every member of
// the group (errGroupPanicked) and is raised again on the caller of the
// decision whose closure panicked, or on lead's if none did.
func (l *Ledger) leadGroup(lead *pendingWrite) {
	q := &l.writes
	ctx, cancel := context.WithCancel(context.WithoutCancel(lead.ctx))
	defer cancel()
	stop := context.AfterFunc(lead.ctx, cancel)
	var group []*pendingWrite
	var live atomic.Int64
	var stops []func() bool
	var err error
	defer func() {
		p := recover()
		stop()
		for _, stop := range stops {
			stop()
		}
		if group == nil {
			q.mu.Lock()
			if i := slices.Index(q.waiting, lead); i >= 0 {
				q.waiting = slices.Delete(q.waiting, i, i+1)
			}
			q.mu.Unlock()
			lead.err = cmp.Or(err, lead.ctx.Err())
			group = []*pendingWrite{lead}
		}
		if p != nil {
			owner := lead
			for _, d := range group {
				d.outcome, d.err = nil, fmt.Errorf("%w: %v", errGroupPanicked, p)
				if d.blamed {
					owner = d
				}
			}
			owner.panicked = p
		}
		for _, d := range group {
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
	}()
	err = l.decideGroup(ctx, func() []*pendingWrite {
		if !stop() {
			return nil // lead's caller is gone
		}
		q.mu.Lock()
		defer q.mu.Unlock()
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
		live.Store(int64(len(group)))
		for _, d := range group {
			stops = append(stops, context.AfterFunc(d.ctx, func() {
				if live.Add(-1) == 0 {
					cancel()
				}
			}))
		}
		return group
	})
}

// decideGroup is the write scaffold: the writer mutex, a write transaction
// begun at the store's serialisation point, the group of decisions take
// gives then (take is not called when the mutex or the transaction is not
// had: the error is then the caller's), the decisions' clock, read once
// they are all asked for, and what the decisions on locks read (in one
// call on PostgreSQL, the clock's: store.PreparedTx.ReadAhead), each
// decision's fn (in a savepoint of its own when there are several), the
// decisions' writes and the notifications of the locks they changed (in
// one call on PostgreSQL: store.PreparedTx.Flush), the checkpoint then
// due, the commit (when any fn wrote anything), and the checkpoint
// published to the witnesses once the mutex is let go, so that a slow or
// hung witness holds up no writer. A decision whose caller's context ended
// before its turn is not made. A group whose write the database refuses
// (the transaction is then aborted) is undone, and each of its decisions
// made again alone, so that only the one refused fails (remakeAlone); so
// is a group whose transaction is lost at a decision's savepoint or at its
// rollback to it (a connection cut).
func (l *Ledger) decideGroup(ctx context.Context, take func() []*pendingWrite) error {
	fail := func(ds []*pendingWrite, err error) {
		for _, d := range ds {
			if d.err == nil {
				d.err, d.outcome = err, nil
			}
		}
	}
	unlock, tx, err := l.awaitWriter(ctx)
	if err != nil {
		return err
	}
	var cp *Checkpointed
	snapshot := false
	defer func() {
		unlock()
		l.publishQuietly(ctx, cp)
		if snapshot {
			l.snapshotAfterWrite(ctx)
		}
	}()
	defer tx.Rollback()
	group := take()
	if len(group) == 0 {
		return nil
	}
	defer func() {
		for _, d := range group {
			d.err = l.denied(l.store.Classify(d.err))
		}
	}()
	q := l.stmts.In(tx)
	var names []string
	for _, d := range group {
		if d.name != "" && d.ctx.Err() == nil {
			names = append(names, d.name)
		}
	}
	now, err := q.ReadAhead(ctx, names)
	if err == nil && now.IsZero() {
		now, err = l.store.Clock(ctx, tx)
	}
	if err != nil {
		fail(group, err)
		return nil
	}
	several := len(group) > 1
	var made []*pendingWrite // decisions whose writes stand in tx
	// The head of the log where the next decision starts, once a decision
	// has read it: each decision after it starts where the last one kept
	// ended, not from a read of its own (see writeTx.loadRow).
	var head *writeTx
	// The Merkle rows the decisions kept so far read and wrote: a decision
	// adds to a copy, kept only if it stands.
	tree := map[int64][]byte{}
	for i, d := range group {
		if err := d.ctx.Err(); err != nil {
			d.err = err
			continue
		}
		if several {
			if err := q.Savepoint(ctx); err != nil {
				remakeAlone(append(made, group[i:]...))
				return nil
			}
		}
		w := &writeTx{l: l, ctx: ctx, tx: tx, q: q, now: now, v: &view{}, grouped: several, tree: maps.Clone(tree)}
		if head != nil {
			w.seq, w.hash, w.headSet = head.seq, head.hash, true
		}
		d.decide(w)
		if err := q.Settle(d.err == nil); err != nil {
			d.outcome, d.err = nil, err
		}
		if d.err != nil {
			d.blame(w.abort)
			if q.Refused() != nil {
				remakeAlone(append(made, group[i:]...))
				return nil
			}
			if several {
				if err := q.RollbackToSavepoint(ctx); err != nil {
					remakeAlone(append(made, group[i:]...))
					return nil
				}
			}
			continue
		}
		if w.headSet {
			head = w
		}
		tree = w.tree
		if len(w.written) > 0 || w.touched || w.rows {
			d.w = w
			made = append(made, d)
		}
	}
	if len(made) == 0 {
		return nil
	}
	// A write of no lock (export, verify, a checkpoint) notifies too, with
	// no lock's name: followers of the log wake on every append.
	var wakes []string
	for _, d := range made {
		if len(d.w.written) > 0 || d.w.rows {
			wakes = append(wakes, d.w.wakes())
		}
	}
	notified, err := q.Flush(ctx, wakes)
	if err != nil {
		if several {
			remakeAlone(made)
		} else {
			fail(made, err)
			abortAll(made)
		}
		return nil
	}
	last := made[len(made)-1].w
	var seq int64
	var journals []journal
	var written []*events.Event
	var stored *Checkpointed // a checkpoint a decision stored, the row a write of no event is read back by
	unsigned, mustSign := false, false
	for _, d := range made {
		if len(d.w.written) > 0 {
			seq = d.w.seq
		}
		written = append(written, d.w.written...)
		stored = cmp.Or(d.w.stored, stored)
		unsigned = unsigned || d.w.unsigned
		mustSign = mustSign || d.w.mustSign
		journals = append(journals, d.w.journals...)
		d.w.journals = nil
	}
	undo := func(err error) {
		_ = joinJournals(journals)
		fail(made, err)
		abortAll(made)
	}
	if mustSign {
		if cp, err = l.signCheckpoint(ctx, q, seq, last.now, true, true); err != nil {
			undo(err)
			return nil
		}
	} else if len(written) > 0 && !unsigned {
		// A checkpoint that cannot be made leaves the decisions standing:
		// the next write tries again, and verify says what is uncovered.
		// A log that no longer extends what was signed takes nothing more.
		if cp, err = l.dueCheckpoint(ctx, q, seq, now); notExtended(err) {
			undo(err)
			return nil
		} else if err != nil {
			l.log.Warn("could not sign a checkpoint", "seq", seq, "err", err)
			cp = nil
		}
	}
	if !notified && len(wakes) > 0 {
		if err := l.store.Changed(ctx, q, wakes); err != nil {
			cp = nil // signed for a log that does not commit: kept, it would refuse every later writer
			undo(fmt.Errorf("ledger: notify: %w", err))
			return nil
		}
	}
	if err := l.commitWith(tx, journals); err != nil {
		if err := l.commitOutcome(ctx, err, written, stored); err != nil {
			cp = nil
			fail(made, err)
			abortAll(made)
			return nil
		}
	}
	l.saw(seq)
	snapshot = crossesSnapshot(written)
	for _, d := range made {
		d.blame(func() {
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
		})
	}
	return nil
}

// commitOutcome is what a commit that returned err did. Its reply may have
// been lost after the database committed (a connection reset once COMMIT
// was sent), so err alone does not say, and a caller told of a failure
// must have nothing recorded. Once this process holds the store's
// serialisation point again, the transaction that returned err is over,
// and the log says whether its last event is there, or, for a write that
// appended none, whether the checkpoint it stored is (a checkpoint's
// signed note is its own: no other write stores the same row): nil when
// it is (the commit stands), the commit's error when it is not, and an
// error wrapping ErrCommitUnknown when the log cannot be read back, or the
// write left nothing to look for (a snapshot or cosignatures alone, which
// their callers only log: the next write or publication makes them again).
//
// On SQLite no reply can be lost (the database is in this process), so
// the read-back finds what the commit's error said; it is the one path
// for both engines all the same: a failed commit there is read back as a
// failure (TestSQLiteCommitRefusedIsAFailure).
func (l *Ledger) commitOutcome(ctx context.Context, err error, written []*events.Event, stored *Checkpointed) error {
	err = fmt.Errorf("ledger: commit: %w", err)
	var what string
	switch {
	case len(written) > 0:
		what = fmt.Sprintf("seq %d is recorded", written[len(written)-1].Seq)
	case stored != nil:
		what = fmt.Sprintf("the checkpoint of %d events is stored", stored.Size)
	default:
		return fmt.Errorf("%w (%w: the write appended no event and stored no checkpoint to look for)", err, ErrCommitUnknown)
	}
	// Bounded by the busy timeout twice over (a connection, then the
	// writer lock) and by the callers' context: one whose deadline passed
	// (a lease's heartbeat at its deadline) is told the outcome is unknown
	// rather than held past it. A restart that ended the session at its
	// COMMIT also refuses the next connections for a moment (shutting
	// down, starting up, a pooler's failed logins): the read-back is tried
	// again until the database answers or that bound passes.
	rctx, cancel := context.WithTimeout(ctx, 2*l.busy)
	defer cancel()
	retry := readBackRetry
	for {
		found, rerr := l.readBack(rctx, written, stored)
		switch {
		case rerr == nil && found:
			l.log.Warn("the commit's reply was lost, but the log holds what it wrote: the write stands", "written", what, "err", err)
			return nil
		case rerr == nil:
			return err
		case !errors.Is(rerr, store.ErrTransient) || retry.Wait(rctx) != nil:
			return fmt.Errorf("%w (%w: the log could not be read back to see whether %s: %v)", err, ErrCommitUnknown, what, rerr)
		}
		l.log.Debug("the commit's outcome could not be read back yet; trying again", "written", what, "err", rerr)
	}
}

// readBackRetry is the wait between commitOutcome's read-backs, drawn at
// random below its delay: after a failover every host whose commit's reply
// was lost reads back at once, and would otherwise retry in step.
var readBackRetry = backoff.Backoff{Min: 50 * time.Millisecond, Max: time.Second, Jitter: true}

// readBack reports whether the log holds the last of written, or, with
// none written, the checkpoint stored, reading under the writer lock.
func (l *Ledger) readBack(ctx context.Context, written []*events.Event, stored *Checkpointed) (bool, error) {
	tx, err := l.beginWrite(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if len(written) > 0 {
		last := written[len(written)-1]
		h, err := store.EventHash(ctx, tx, last.Seq)
		return h == last.Hash, l.store.Classify(err)
	}
	found, err := store.HasCheckpoint(ctx, tx, stored.Size, stored.Note)
	return found, l.store.Classify(err)
}

// denied is err, and when it is the database's refusal for a right the
// role lacks, which right that is for: the database's own message names
// the table or function, this says where and what to do.
func (l *Ledger) denied(err error) error {
	if !errors.Is(err, store.ErrPermissionDenied) {
		return err
	}
	return fmt.Errorf("%w (on %s: the role lacks a right this command needs; docs/postgresql.md lists a writer's grants, "+
		"which the database's owner makes again after an upgrade that added a table, or to restore a grant revoked; "+
		"project, import, prune and unprune are the owner's)", err, l.store.Source())
}

// remakeAlone answers the decisions of a group whose write the database
// refused, or whose transaction was lost, every one of them undone with
// the transaction: each is made again alone (errGroupRefused, see
// remadeAlone), for a verdict of its own.
func remakeAlone(ds []*pendingWrite) {
	abortAll(ds)
	for _, d := range ds {
		d.w, d.outcome, d.err = nil, nil, errGroupRefused
	}
}

// abortAll undoes what the decisions changed outside the database.
func abortAll(ds []*pendingWrite) {
	for _, d := range ds {
		if d.w != nil {
			d.blame(d.w.abort)
		}
	}
}

// errGroupRefused refuses, in a group, the decisions the database's
// refusal of the group's write undid: each is made again alone.
var errGroupRefused = errors.New("ledger: the group's write was refused: the decision is made again alone")

// errGroupPanicked fails the decisions of a group whose work panicked
// outside fn (see leadGroup).
var errGroupPanicked = errors.New("ledger: the group's write panicked")
