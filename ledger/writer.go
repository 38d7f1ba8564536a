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
