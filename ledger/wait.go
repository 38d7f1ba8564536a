package ledger

import (
	"context"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// PeekHeld answers a waiter's attempt that could only be refused, without
// taking the writer mutex: the lock's row and file, read outside any write
// transaction, show an active holder other than the request, with nothing
// to repair, or a lock free (or its holder dead) with waiters queued
// before the request (see queue.go). Many waiters would otherwise keep the writer mutex busy with
// attempts doomed to fail, and starve the holder's own release. nil means
// not sure: make the attempt with TryAcquire. It records nothing and
// validates nothing: a waiter's first attempt, and its last (which records
// acquire_blocked), go through TryAcquire (see lease.Wait).
func (l *Ledger) PeekHeld(ctx context.Context, req AcquireRequest) *HeldError {
	r, err := store.LoadRow(ctx, l.store, req.Lock)
	if err != nil {
		return nil
	}
	v, err := l.inspect(req.Lock, r)
	if err != nil || len(v.repairs) > 0 || v.interloper {
		return nil
	}
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil
	}
	h := v.holder
	if h == nil {
		return l.peekQueued(ctx, req, now)
	}
	if !h.foreign && h.rec.RequestID == req.RequestID {
		return nil
	}
	state, job := judge(h, now, l.host, l.probe, req.MaxAge)
	if state == events.StateDead {
		return l.peekQueued(ctx, req, now)
	}
	if state != events.StateHeld {
		return nil
	}
	return &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign, Corrupt: h.corrupt, JobPIDs: job}
}

// Watch wakes a waiter when lock may have changed (the store's own way:
// the lock files' directory, or the database's notifications).
func (l *Ledger) Watch(lock string) store.Waker { return l.store.Watch(lock) }

// WatchLog wakes a reader of the log when events may have been appended
// (a write to ROOT/ledger.db or its write-ahead log, or the database's
// notifications). Call it before the read it follows.
func (l *Ledger) WatchLog(ctx context.Context) (store.Waker, error) { return l.store.WatchLog(ctx) }
