package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/internal/lockfile"
)

// errWriterBusy: another process held the writer mutex past the busy timeout.
var errWriterBusy = lockfile.ErrBusy

// lockWriter takes the writer mutex: a sync.Mutex for this process, then
// the store's own part for the other processes (see store.lockWriter).
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
	unlock, err := l.store.lockWriter(ctx)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	return func() {
		unlock()
		l.mu.Unlock()
	}, nil
}

// flockWriter is SQLite's part of the writer mutex (lockfile.Mutex),
// waited for up to the busy timeout and while ctx lasts.
func (l *Ledger) flockWriter(ctx context.Context) (func(), error) {
	return l.flock.Lock(ctx, l.busy, time.Millisecond)
}
