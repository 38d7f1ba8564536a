package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"golang.org/x/sys/unix"
)

// errWriterBusy: another process held the writer mutex past the busy timeout.
var errWriterBusy = errors.New("ledger busy: another process held the writer lock past the busy timeout")

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

// flockWriter is SQLite's part of the writer mutex: an flock(2) on
// ROOT/writer.flock. The kernel drops the flock when its holder dies, so a
// killed writer never wedges the ledger. The wait is bounded by the busy
// timeout and by ctx.
func (l *Ledger) flockWriter(ctx context.Context) (func(), error) {
	deadline := time.Now().Add(l.busy)
	// Short, jittered polls: a writer holds the mutex for about one commit,
	// and a long sleep here lets the same process win again and again.
	backoff := 50 * time.Microsecond
	for {
		err := unix.Flock(int(l.flock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(int(l.flock.Fd()), unix.LOCK_UN) }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return nil, fmt.Errorf("ledger: writer mutex: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, errWriterBusy
		}
		if err := sleepCtx(ctx, backoff/2+time.Duration(rand.Int64N(int64(backoff)))); err != nil {
			return nil, err
		}
		if backoff < time.Millisecond {
			backoff *= 2
		}
	}
}
