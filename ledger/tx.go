package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/schema"
	"github.com/lockledger/lockledger/store"
)

// writeTx is one decision on one lock: made under the writer mutex inside a
// BEGIN IMMEDIATE transaction, with the lock's file reconciled first.
type writeTx struct {
	l       *Ledger
	ctx     context.Context
	tx      *sql.Tx
	q       store.PreparedTx // tx through prepared statements
	now     time.Time
	v       *view
	seq     int64
	hash    string
	headSet bool
	tip     store.Tip // the head read with the lock's row (write)
	// tree: the rows of tlog_hashes the transaction has read or written,
	// as they stand where w began and as w's appends leave them.
	tree     map[int64][]byte
	touched  bool      // a file change waits for the commit (journals to drop after it)
	journals []journal // the journals of those changes, each fsynced from its placing on
	paths    []string  // the lock paths whose journals drop after the commit
	written  []*events.Event
	// removals free lock files once the commit is durable: a file that
	// says "held" goes only after the ledger says "free", so a commit that
	// fails leaves both saying "held", and a removal that fails after it
	// leaves a file that the next writer, or project, removes.
	removals []func() error
	// rows: fn wrote rows other than events (a checkpoint): commit.
	rows bool
	// stored: the checkpoint fn stored, if any (commitOutcome's read-back
	// of a write that appended no event).
	stored *Checkpointed
	// unsigned: the log is damaged, and no checkpoint may sign it.
	unsigned bool
	// mustSign: the write stores a signed checkpoint of its head, or fails
	// (a prune's marker: verify takes the marker only with a signature of
	// a key it trusts).
	mustSign bool
	// grouped: the decision shares its transaction with others, and may
	// change no file but its lock's own (onlyOwnFiles).
	grouped bool
	// aborted undoes changes outside the database when the transaction
	// does not commit; committed finishes them once it has (its error is
	// the caller's).
	aborted   func()
	committed func() error
}

// removeAfterCommit defers remove until the decision has committed.
func (w *writeTx) removeAfterCommit(remove func() error) {
	w.removals = append(w.removals, remove)
}

// update is the one write scaffold every writing path goes through, for
// one decision fn (see decideGroup): fn returns the outcome to report,
// which commits with what fn wrote (a HeldError after recording
// acquire_blocked, say), or an error that rolls everything back;
// w.aborted and w.committed run on either.
func (l *Ledger) update(ctx context.Context, fn func(w *writeTx) (outcome error, err error)) error {
	d := &pendingWrite{ctx: ctx, fn: fn}
	if err := l.decideGroup(ctx, func() []*pendingWrite { return []*pendingWrite{d} }); err != nil {
		return err
	}
	return d.result()
}

// abort undoes what w changed outside the database before its
// transaction rolls back.
func (w *writeTx) abort() {
	w.closeJournals()
	if w.aborted != nil {
		w.aborted()
	}
}

// write runs fn as one decision on lock name, with the lock's row, file
// and journal read and reconciled first (see update). File changes fn
// makes commit with the decision and are undone when it does not commit.
// Decisions on distinct locks that this process's clients ask for at once
// may share one transaction and commit (see writeQueue).
func (l *Ledger) write(ctx context.Context, name string, fn func(w *writeTx) (outcome error, err error)) error {
	return l.queued(ctx, name, func(w *writeTx) (error, error) {
		before, err := w.loadRow(name)
		if err != nil {
			return nil, err
		}
		if w.v, err = l.inspect(name, before); err != nil {
			return nil, err
		}
		if err := l.applyRepairs(w.v); err != nil {
			return nil, err
		}
		w.aborted = func() {
			if w.touched {
				l.undo(name, before)
				w.undoTargets()
			}
		}
		w.committed = func() error {
			if !w.touched {
				return nil
			}
			if err := l.files.Done(name); err != nil {
				l.log.Warn("could not remove the lock journal; the next writer will", "lock", name, "err", err)
			}
			for _, p := range w.paths {
				if err := lockfile.RemoveIfExists(lockfile.JournalOf(p)); err != nil {
					l.log.Warn("could not remove a lock journal; the next writer will", "path", p, "err", err)
				}
			}
			return nil
		}
		return fn(w)
	})
}

// loadRow reads the lock's row, and the head of the log with it unless a
// decision before w in its group read the head already (w.headSet): the
// head checked once holds for the whole transaction, which only the
// group's own appends move.
func (w *writeTx) loadRow(name string) (*store.Row, error) {
	before, tip, err := store.LoadDecision(w.ctx, w.q, name, store.QueueSince(w.now), !w.headSet, w.tree)
	w.tip = tip
	return before, err
}

// journal is a file change's journal being made durable: its fsync and
// close start when it is placed, beside the rest of the decision, and end
// with the error sent once.
type journal <-chan error

// syncJournal starts j's fsync and close.
func syncJournal(j *os.File) journal {
	synced := make(chan error, 1)
	go func() { synced <- lockfile.SyncClose(j) }()
	return synced
}

// joinJournals waits for the journals' fsyncs; the first error is returned.
func joinJournals(js []journal) error {
	var err error
	for _, j := range js {
		err = cmp.Or(err, <-j)
	}
	return err
}

// commitWith commits tx and waits for the lock files' journals, fsynced
// from their placing on: a journal's flush runs beside the decision's
// statements rather than beside the commit's own flush, which a disk
// makes one after the other. Each journal stays until both are done, so
// a crash in between is undone or finished by the next writer (see
// internal/lockfile).
func (l *Ledger) commitWith(tx *sql.Tx, journals []journal) error {
	err := tx.Commit()
	serr := joinJournals(journals)
	if err == nil && serr != nil {
		l.log.Warn("lock file fsync failed after commit; the next writer will rewrite it", "err", serr)
	}
	return err
}

// addJournal keeps the journal of a file change for commit, its fsync
// begun: of the lock's own file (path ""), or of the target at path.
func (w *writeTx) addJournal(path string, j *os.File) {
	w.journals = append(w.journals, syncJournal(j))
	if path != "" {
		w.paths = append(w.paths, path)
	}
	w.touched = true
}

// onlyOwnFiles refuses, in a group, a decision about to change (changes)
// a file that is not its lock's own (see writeQueue): it is made again
// alone.
func (w *writeTx) onlyOwnFiles(changes bool) error {
	if changes && w.grouped {
		return errAlone
	}
	return nil
}

// closeJournals waits for the journals' fsyncs of a decision that does
// not commit, before its file changes are undone.
func (w *writeTx) closeJournals() {
	_ = joinJournals(w.journals)
	w.journals = nil
}

// undoTargets reverts target files placed by a decision that did not commit.
func (w *writeTx) undoTargets() {
	for _, p := range w.paths {
		if err := w.l.recoverTarget(p, nil); err != nil {
			w.l.log.Error("could not undo an uncommitted lock file change; the next writer will", "path", p, "err", err)
		}
	}
}

// inspect reads a lock's file and journal and interprets them with its row.
func (l *Ledger) inspect(name string, r *store.Row) (*view, error) {
	file, err := l.files.Read(name)
	if err != nil {
		return nil, err
	}
	journal, err := l.files.ReadJournal(name)
	if err != nil {
		return nil, err
	}
	if r != nil && !l.ownsFiles(r) {
		return l.interpretRemote(name, r, file, journal), nil
	}
	return interpret(name, r, file, journal), nil
}

// ownsFiles reports whether this host's lock files project r: always on
// SQLite; on a store for many hosts, only for a holder (or last holder) on this host.
func (l *Ledger) ownsFiles(r *store.Row) bool {
	return !l.store.ManyHosts() || r.HostID == l.host.ID
}

// interpretRemote reads this host's file of a lock whose row names a
// holder on another host, which projects its own files there. A file here
// that the ledger wrote for an earlier holding on this host is a leftover;
// any other is left alone, and the row decides.
func (l *Ledger) interpretRemote(name string, r *store.Row, file, journal lockfile.State) *view {
	v := interpret(name, nil, file, journal)
	v.row = r
	if v.file.Exists {
		if rec, err := ParseLockFile(v.file.Data); err == nil && rec.HostID == l.host.ID && l.recordedHere(name, rec.RequestID) {
			v.repairs = append(v.repairs, repairRemoveLeftover)
			v.file = lockfile.State{}
		}
	}
	v.holder = nil
	if r.Held {
		v.holder = holdingFromRow(r)
	} else if v.file.Exists {
		v.holder = foreignHolding(name, v.file)
	}
	return v
}

// recordedHere reports whether the ledger records request requestID on
// lock name from this host: a lock file of it is the ledger's own.
func (l *Ledger) recordedHere(name, requestID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), l.busy)
	defer cancel()
	_, took, err := store.TakenBefore(ctx, l.store, name, requestID, math.MaxInt64)
	return err == nil && took != nil
}

func (l *Ledger) applyRepairs(v *view) error {
	for _, r := range v.repairs {
		var err error
		switch r {
		case repairDropPhantom:
			l.log.Warn("removing a lock file from a change that never committed", "lock", v.name)
			err = l.files.Drop(v.name)
		case repairDropJournal:
			err = l.files.Settle(v.name)
		case repairPlace, repairReplace:
			put := l.files.Replace
			if r == repairPlace {
				l.log.Warn("lock file missing for a held lock; restoring it from the ledger", "lock", v.name)
				put = l.files.Place
			}
			var j *os.File
			if j, err = put(v.name, v.row.File); err == nil {
				if err = lockfile.SyncClose(j); err == nil {
					err = l.files.Done(v.name)
				}
			}
		case repairRemoveLeftover:
			err = l.files.Drop(v.name)
		}
		if err != nil {
			return fmt.Errorf("ledger: repair lock file %s: %w", v.name, err)
		}
	}
	if v.interloper {
		l.log.Warn("a lock file the ledger did not write sits at the path of a lock the ledger holds; leaving it alone",
			"lock", v.name, "path", l.files.Path(v.name))
	}
	return nil
}

// undo reverts an uncommitted file change after a failed commit.
func (l *Ledger) undo(name string, before *store.Row) {
	v, err := l.inspect(name, before)
	if err == nil {
		err = l.applyRepairs(v)
	}
	if err != nil {
		l.log.Error("could not undo an uncommitted lock file change; the next writer will", "lock", name, "err", err)
	}
}

// append validates ev against its schema, chains it and inserts it.
func (w *writeTx) append(typ events.Type, id Identity, payload any) (*events.Event, error) {
	if _, err := w.nextSeq(); err != nil {
		return nil, err
	}
	ev := &events.Event{
		Envelope: events.Envelope{
			EventID: events.NewULID(w.now), Seq: w.seq + 1, Type: typ, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(w.now), LockName: w.v.name, RequestID: id.RequestID, Actor: id.Actor,
			HostID: w.l.host.ID, PID: id.PID,
		},
		Payload:  payload,
		PrevHash: w.hash,
	}
	ev.SetOSUser(proc.Self())
	if err := ev.Seal(); err != nil {
		return nil, err
	}
	if err := schema.ValidateEvent(typ, ev.Body); err != nil {
		// An event that fails its schema is a bug in the caller, never stored.
		return nil, fmt.Errorf("ledger: refusing to append %s: %w", typ, err)
	}
	if err := store.InsertEvent(w.ctx, w.q, ev.Seq, ev.EventID, string(typ), ev.LockName, ev.RequestID, ev.Actor, ev.At,
		ev.Body, ev.PrevHash, ev.Hash); err != nil {
		return nil, fmt.Errorf("ledger: append %s: %w", typ, err)
	}
	if err := store.AppendTree(w.ctx, w.q, ev.Seq, ev.Body, w.tree); err != nil {
		return nil, err
	}
	w.seq, w.hash = ev.Seq, ev.Hash
	w.written = append(w.written, ev)
	return ev, nil
}

// nextSeq is the seq the next appended event will get (the fencing token of
// an acquisition).
func (w *writeTx) nextSeq() (int64, error) {
	if !w.headSet {
		seq, hash, err := w.tip.Head(w.ctx, w.q, w.l.genesis)
		if err != nil {
			return 0, err
		}
		w.seq, w.hash, w.headSet = seq, hash, true
	}
	return w.seq + 1, nil
}

// saveHolder writes a new or renewed exclusive holding: the lock's row
// (its file) and its holder's row of lock_holders, where the holder it
// replaces (a take-over) is deleted.
func (w *writeTx) saveHolder(h *holding, seq int64) error {
	hr := holderRow(h, 1, seq)
	hr.Exclusive = true
	hr.Targets = store.TargetsJSON(h.targets)
	if r := w.v.row; r != nil && r.Held && r.RequestID != h.rec.RequestID {
		if err := store.DeleteExclusive(w.ctx, w.q, r.Name, r.RequestID); err != nil {
			return err
		}
	}
	if err := store.SaveHolder(w.ctx, w.q, hr); err != nil {
		return err
	}
	return store.SaveRow(w.ctx, w.q, &store.Row{HolderRow: *hr, File: h.file})
}

// saveFree frees the lock: its exclusive holder's row goes; its row keeps
// the last holding's file, updated by seq.
func (w *writeTx) saveFree(seq int64) error {
	r := *w.v.row
	if r.Held {
		if err := store.DeleteExclusive(w.ctx, w.q, r.Name, r.RequestID); err != nil {
			return err
		}
	}
	r.Held = false
	r.UpdatedSeq = seq
	return store.SaveRow(w.ctx, w.q, &r)
}
