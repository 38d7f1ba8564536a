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

// lockWriter takes the writer mutex: a sync.Mutex for this process and an
// flock(2) on ROOT/writer.flock for the others. The kernel drops the flock
// when its holder dies, so a killed writer never wedges the ledger. The
// wait is bounded by the busy timeout and by ctx.
func (l *Ledger) lockWriter(ctx context.Context) (func(), error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	if l.readOnly {
		l.mu.Unlock()
		return nil, fmt.Errorf("ledger %s: %w", l.root, ErrReadOnly)
	}
	deadline := time.Now().Add(l.busy)
	// Short, jittered polls: a writer holds the mutex for about one commit,
	// and a long sleep here lets the same process win again and again.
	backoff := 50 * time.Microsecond
	for {
		err := unix.Flock(int(l.flock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(l.flock.Fd()), unix.LOCK_UN)
				l.mu.Unlock()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			l.mu.Unlock()
			return nil, fmt.Errorf("ledger: writer mutex: %w", err)
		}
		if time.Now().After(deadline) {
			l.mu.Unlock()
			return nil, errWriterBusy
		}
		if err := sleepCtx(ctx, backoff/2+time.Duration(rand.Int64N(int64(backoff)))); err != nil {
			l.mu.Unlock()
			return nil, err
		}
		if backoff < time.Millisecond {
			backoff *= 2
		}
	}
}
