package lease

import (
	"context"
	"errors"
	"time"

	"github.com/lockledger/lockledger/internal/backoff"
	"github.com/lockledger/lockledger/ledger"
)

// HeartbeatFailuresBeforeEvent is how many passing failures in a row
// write heartbeat_failed.
const HeartbeatFailuresBeforeEvent = 3

// deadline is when the lease counts itself lost without another
// successful heartbeat: on the monotonic clock, lastOK + ttl − margin.
func (s *Lease) deadline() time.Time {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	return s.lastOK.Add(s.ttl - s.margin)
}

// letGo is when a lease lost at its deadline stops trying to reach the
// ledger (to record the loss, to release): half the margin after the
// deadline, half the margin before anyone else may take the lock.
func (s *Lease) letGo() time.Time { return s.deadline().Add(s.margin / 2) }

// watch declares the lease lost at its deadline, whatever the heartbeat
// goroutine is doing: a call to an unreachable database may hang.
func (s *Lease) watch(ctx context.Context) {
	defer s.wg.Done()
	for {
		if !sleep(ctx, s, s.deadline().Sub(s.clock.Now()), s.renewed) {
			return
		}
		s.dmu.Lock()
		if s.clock.Now().Before(s.lastOK.Add(s.ttl - s.margin)) {
			s.dmu.Unlock() // renewed meanwhile
			continue
		}
		cause := &DeadlineError{Lock: s.acq.Lock, RequestID: s.acq.RequestID, LastOK: s.lastOK, TTL: s.ttl, Margin: s.margin,
			Failures: s.failures, LastErr: s.lastErr}
		// Under dmu, so that no heartbeat counts as a success after this.
		s.markLost(cause)
		s.dmu.Unlock()
		s.l.Logger().Error("lock lost: no heartbeat got through before the local deadline", "lock", s.acq.Lock, "err", cause)
		// Tell the holder first, so that it stops its work; then get the
		// loss into the ledger, which may itself be what fails.
		if s.recordLoss(max(cause.Failures, 1), cause.Error(), s.letGo()) {
			s.dmu.Lock()
			s.traced = true
			s.dmu.Unlock()
		}
		return
	}
}

// sleep waits d on s's clock, or until wake receives; it reports false
// when the lease is stopped (ctx) or lost first.
func sleep[T any](ctx context.Context, s *Lease, d time.Duration, wake <-chan T) bool {
	fired, stop := s.clock.Timer(d)
	defer stop()
	select {
	case <-ctx.Done():
		return false
	case <-s.lost:
		return false
	case <-wake:
	case <-fired:
	}
	return true
}

// heartbeat renews the lock every interval (sooner after a failure, at
// once when poked) until the lease is stopped or lost.
func (s *Lease) heartbeat(ctx context.Context) {
	defer s.wg.Done()
	log := s.l.Logger()
	failures := 0
	unrecorded := 0 // a run of failures that reached the threshold but is not in the ledger yet
	next := s.interval
	defer func() { s.recordEnded(ctx, failures) }()
	for {
		if !sleep(ctx, s, next, s.checks) {
			return
		}
		// A call still unanswered at the deadline is abandoned: the lease
		// is lost then anyway.
		sent := s.clock.Now()
		cctx, cancel := context.WithTimeout(ctx, s.deadline().Sub(sent))
		_, err := s.l.Renew(cctx, ledger.RenewRequest{Lock: s.acq.Lock, Identity: s.id, FencingToken: s.acq.FencingToken,
			PriorFailures: failures})
		abandoned := err != nil && cctx.Err() != nil && ctx.Err() == nil
		cancel()
		switch {
		case err == nil:
			if !s.renew(sent) {
				return // lost at the deadline while the call was under way
			}
			if unrecorded > 0 && s.record(ctx, unrecorded, "heartbeats failed, then recovered", false) {
				unrecorded = 0
			}
			failures, next = 0, s.interval
			continue
		case ctx.Err() != nil:
			return
		case abandoned:
			// The deadline passed during the call, and only this goroutine
			// moves it: the watchdog declares the loss.
			return
		case errors.Is(err, ledger.ErrLost), errors.Is(err, ledger.ErrNotHolder):
			// The ledger shows another holder (heartbeat_failed with lock_lost
			// is recorded), whether or not the watch saw it first.
			err = s.whoEnded(ctx, err)
			s.dmu.Lock()
			s.ended = false
			s.markLost(err)
			s.dmu.Unlock()
			return
		}
		failures++
		s.dmu.Lock()
		s.failures, s.lastErr = failures, err
		s.dmu.Unlock()
		if s.Err() != nil {
			return // the watchdog declared the loss and records it
		}
		log.Warn("heartbeat failed", "lock", s.acq.Lock, "consecutive", failures, "err", err)
		if failures == HeartbeatFailuresBeforeEvent {
			unrecorded = failures
		}
		if unrecorded > 0 && s.record(ctx, unrecorded, err.Error(), false) {
			unrecorded = 0
		}
		// Retry sooner than the interval, but never later than the TTL allows.
		next = min(s.interval, max(s.ttl/10, 100*time.Millisecond))
	}
}

// renew moves the deadline on after a heartbeat sent at sent succeeded; it
// reports false when the lease was lost at its deadline first.
func (s *Lease) renew(sent time.Time) bool {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.Err() != nil {
		return false
	}
	s.lastOK, s.failures, s.lastErr = sent, 0, nil
	select {
	case s.renewed <- struct{}{}:
	default:
	}
	return true
}

// record writes heartbeat_failed. The ledger may be the thing that fails;
// the caller tries again at its next heartbeat.
func (s *Lease) record(ctx context.Context, failures int, cause string, lost bool) bool {
	if err := s.l.RecordHeartbeatFailure(ctx, s.acq.Lock, s.id, failures, cause, lost); err != nil {
		s.l.Logger().Debug("could not record heartbeat_failed yet", "lock", s.acq.Lock, "err", err)
		return false
	}
	return true
}

// recordLoss retries heartbeat_failed with lock_lost while the ledger is
// busy, until until (when the lease lets go), even after Release was
// called: a holder cut off from its ledger must not wait for it (the ledger
// then judges the lock stale by its TTL on its own; RecordLoss tries again
// later). It reports whether the loss was recorded.
func (s *Lease) recordLoss(failures int, cause string, until time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), until.Sub(s.clock.Now()))
	defer cancel()
	err := recordLost(ctx, s.l, s.acq.Lock, s.id, failures, cause, backoff.Backoff{Min: 50 * time.Millisecond, Max: 50 * time.Millisecond},
		func(err error) bool { return !ledger.IsTransient(err) || ctx.Err() != nil })
	if err != nil {
		s.l.Logger().Warn("could not record the lost lock yet (see RecordLoss)", "lock", s.acq.Lock, "err", err)
		return false
	}
	return true
}
