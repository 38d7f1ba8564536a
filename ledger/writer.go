package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/store"
)

// errWriterBusy: another process held the writer mutex past the busy timeout.
var errWriterBusy = lockfile.ErrBusy

// awaitWriter takes the writer mutex and begins a write transaction at the
// store's serialisation point. The busy timeout bounds how long the other
// writers keep this one out without getting anywhere, not its place in a
// queue that moves: a wait that runs out while other writers appended to
// the log (its head moved past the newest this process saw) is waited
// again, as long as writers keep getting through and ctx lasts. A writer
// that holds on without committing (stopped, or another program holding
// the database) fails the wait after one busy timeout.
func (l *Ledger) awaitWriter(ctx context.Context) (func(), *sql.Tx, error) {
	for {
		unlock, err := l.lockWriter(ctx)
		if err == nil {
			var tx *sql.Tx
			if tx, err = l.beginWrite(ctx); err == nil {
				return unlock, tx, nil
			}
			unlock()
		}
		if !IsTransient(err) || ctx.Err() != nil || !l.othersWrote(ctx) {
			return nil, nil, err
		}
		l.log.Debug("the writer lock was busy while other writers got through: waiting on", "err", err)
	}
}

// othersWrote says whether the log's head moved past the newest this
// process saw, and sees it. A head it cannot read is not progress.
func (l *Ledger) othersWrote(ctx context.Context) bool {
	before := l.seen.Load()
	seq, _, err := store.Head(ctx, l.store, l.genesis)
	return err == nil && before >= 0 && l.saw(seq) > before
}

// saw records seq as a head this process has seen, and returns the newest
// it has seen.
func (l *Ledger) saw(seq int64) int64 {
	for {
		seen := l.seen.Load()
		if seen < 0 || seq <= seen || l.seen.CompareAndSwap(seen, seq) {
			return max(seen, seq)
		}
	}
}

// lockWriter takes the writer mutex: a sync.Mutex for this process, then
// the root's flock (lockfile.Mutex) for the other processes on this host,
// waited for up to the busy timeout and while ctx lasts. It covers what a
// decision does to this host's lock files after its commit, which the
// database's own serialisation point, released at the commit, does not.
func (l *Ledger) lockWriter(ctx context.Context) (func(), error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	if l.readOnly {
		l.mu.Unlock()
		return nil, fmt.Errorf("ledger %s: %w", l.where(), ErrReadOnly)
	}
	unlock, err := l.flock.Lock(ctx, l.busy, time.Millisecond)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	return func() {
		unlock()
		l.mu.Unlock()
	}, nil
}
