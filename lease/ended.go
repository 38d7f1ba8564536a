package lease

import (
	"context"
	"errors"
	"time"

	"github.com/lockledger/lockledger/ledger"
)

// watchHolding declares the lease lost the moment the ledger shows that
// its holding ended by another's hand (a forced release, a release under
// its request id by another process, a steal, a take-over), instead of at
// the next heartbeat, up to 30 s later. It reads the lock (CheckHolding)
// whenever the lock changes (Ledger.Watch: the lock file's directory, or
// the database's notifications on PostgreSQL) and at every interval. It
// only reads: the lease's own heartbeats change the lock too, and a write
// on every change would wake every other holder's watch in turn. The
// heartbeat goroutine records the loss it declares (heartbeat_failed with
// lock_lost).
func (s *Lease) watchHolding(ctx context.Context) {
	defer s.wg.Done()
	w := s.l.Watch(s.acq.Lock)
	defer w.Close()
	// The first wait only sets the watch up (PostgreSQL's LISTEN), so that
	// the first read is made with it in place and no change goes unseen.
	wait := time.Duration(0)
	var unsettled time.Time
	for {
		w.Wait(ctx, wait)
		wait = s.interval
		if ctx.Err() != nil || s.Err() != nil {
			return
		}
		err := s.l.CheckHolding(ctx, s.acq.Lock, s.acq.RequestID, s.acq.FencingToken)
		if errors.Is(err, ledger.ErrUnsettled) {
			// A write is under way here, and its commit changes no file:
			// look again soon, for up to the busy timeout (a writer that
			// died leaves its journal to the next one).
			if unsettled.IsZero() {
				unsettled = time.Now()
			}
			if time.Since(unsettled) < s.l.BusyTimeout() {
				wait = min(s.interval, unsettledRecheck)
			}
			continue
		}
		unsettled = time.Time{}
		var nh *ledger.NotHolderError
		if !errors.As(err, &nh) {
			continue // held, or the read failed: the heartbeat judges that
		}
		s.dmu.Lock()
		s.ended = true
		s.markLost(nh)
		s.dmu.Unlock()
		return
	}
}

// unsettledRecheck is how soon the watch looks again at a lock a write
// is changing, should its commit go unseen.
const unsettledRecheck = 5 * time.Millisecond

// recordEnded appends heartbeat_failed with lock_lost for a loss the
// watch declared, as a heartbeat that found it would have. It is bounded
// by the busy timeout and not by the lease's stop: the loss is recorded
// even when the holder releases at once.
func (s *Lease) recordEnded(ctx context.Context, failures int) {
	s.dmu.Lock()
	ended := s.ended
	s.dmu.Unlock()
	if !ended {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.l.BusyTimeout())
	defer cancel()
	if err := s.l.RecordHeartbeatFailure(rctx, s.acq.Lock, s.id, failures+1, s.Err().Error(), true); err != nil {
		s.l.Logger().Error("could not record the lost lock", "lock", s.acq.Lock, "err", err)
	}
}

// whoEnded adds to the ledger's answer that the holding is gone who ended
// it, when the answer did not say (a heartbeat's or a release's).
func (s *Lease) whoEnded(ctx context.Context, err error) error {
	var nh, found *ledger.NotHolderError
	if errors.As(err, &nh) && nh.EndedBy == nil &&
		errors.As(s.l.CheckHolding(ctx, s.acq.Lock, s.acq.RequestID, s.acq.FencingToken), &found) {
		nh.EndedBy = found.EndedBy
	}
	return err
}
