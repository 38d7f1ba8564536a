// Package lease holds a lock for the life of a piece of work: Acquire takes
// it from a ledger and keeps it alive with a heartbeat goroutine, a local
// deadline says when the holder must count it lost even while the ledger
// cannot be reached, and Release joins the heartbeat and records how the
// work ended. A lease that superseded an older run of its job waits for
// that job, and those it was itself still waiting for, to stop
// (AwaitSuperseded). It uses only the ledger's exported API.
//
// docs/architecture.md shows where this package sits among the others.
package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/backoff"
	"github.com/lockledger/lockledger/ledger"
)

// Lease is a lock held by this process and kept alive by a heartbeat
// goroutine until Release. Lost is closed if the lock is lost: the ledger
// shows another holder, or no heartbeat succeeded before the local
// deadline (see DeadlineError), which a timer enforces even while a
// heartbeat call hangs. A holding ended by another's hand (a forced
// release, a steal, a take-over) is seen as the lock changes, through the
// ledger's Watch, not only at the next heartbeat: Err is then a
// *ledger.NotHolderError whose EndedBy says who ended it. Done is closed
// once the lease is gone, lost or released.
type Lease struct {
	l      *ledger.Ledger
	acq    *ledger.Acquisition
	id     ledger.Identity
	ttl    time.Duration
	config // the options it was acquired with: interval, margin, clock, checks

	lost     chan struct{}
	done     chan struct{}
	lostOnce sync.Once
	doneOnce sync.Once
	lostErr  error

	// dmu guards the deadline state, shared by the heartbeat goroutine and
	// the watchdog; renewed tells the watchdog that the deadline moved.
	dmu      sync.Mutex
	lastOK   time.Time // send time of the last successful heartbeat (or the acquire), monotonic
	failures int       // heartbeat calls failed since lastOK
	lastErr  error     // the last of them
	traced   bool      // the deadline loss is recorded in the ledger
	ended    bool      // the watch saw the holding end (recorded by the heartbeat goroutine)
	renewed  chan struct{}

	takenOver TakenOver

	stop     context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	released bool
}

// Acquire takes the lock req asks for (its TTL DefaultTTL when it has
// none) and starts heartbeating it every min(ttl/3, 30s). A stale holder
// taken over by force (req.Force) on this machine has its job stopped
// before Acquire returns (see StopTakenOver). It fails with
// *ledger.HeldError (ledger.ErrHeld) or *ledger.StaleError
// (ledger.ErrStale) when the lock cannot be had within the wait. ctx
// bounds the acquire and its wait, not the lease: the heartbeat runs until
// Release.
func Acquire(ctx context.Context, l *ledger.Ledger, req ledger.AcquireRequest, opts ...Option) (*Lease, error) {
	c, err := newConfig(ctx, &req, opts)
	if err != nil {
		return nil, err
	}
	var a *ledger.Acquisition
	if c.supersede {
		a, err = l.Supersede(ctx, req)
	} else {
		a, err = Wait(ctx, l, req, c.wait, c.observe)
	}
	if err != nil {
		return nil, err
	}
	s := &Lease{l: l, acq: a, id: a.Identity(), ttl: req.TTL, config: c, lost: make(chan struct{}), done: make(chan struct{}),
		renewed: make(chan struct{}, 1), lastOK: a.HeartbeatSent()}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	s.wg.Add(3)
	go s.heartbeat(hctx)
	go s.watch(hctx)
	go s.watchHolding(hctx)
	// An acquire answered past the lease's deadline (counted from the
	// request's send: a ledger that kept it waiting) is a lease lost
	// already, which its watcher is about to say: returned so, so that no
	// caller starts work under it. Nothing renews it meanwhile: a
	// heartbeat's call ends at the deadline.
	if !s.clock.Now().Before(s.deadline()) {
		<-s.lost
	}
	// Heartbeating already: stopping the job may take its grace.
	s.takenOver = StopTakenOver(ctx, l, a, c.grace)
	return s, nil
}

// TakenOver is what became of the job of the stale holder this lease took
// the lock from by force: stopped before Acquire returned (see
// StopTakenOver).
func (s *Lease) TakenOver() TakenOver { return s.takenOver }

// Lock is the lock's name.
func (s *Lease) Lock() string { return s.acq.Lock }

// RequestID is the holder's request id.
func (s *Lease) RequestID() string { return s.acq.RequestID }

// FencingToken increases strictly with every acquisition of this lock;
// pass it to the resources the lock protects so they can refuse a stale holder.
func (s *Lease) FencingToken() int64 { return s.acq.FencingToken }

// Acquisition is how the lock was taken (stolen, from whom).
func (s *Lease) Acquisition() ledger.Acquisition { return *s.acq }

// Lost is closed when the lock is lost.
func (s *Lease) Lost() <-chan struct{} { return s.lost }

// Done is closed when the lease is gone: lost (Err says why) or released.
func (s *Lease) Done() <-chan struct{} { return s.done }

// Err is why the lock was lost (nil while it is held, and after a release
// of a lock that was never lost).
func (s *Lease) Err() error {
	select {
	case <-s.lost:
		return s.lostErr
	default:
		return nil
	}
}

func (s *Lease) markLost(err error) {
	s.lostOnce.Do(func() {
		s.lostErr = err
		close(s.lost)
	})
	s.markDone()
}

func (s *Lease) markDone() { s.doneOnce.Do(func() { close(s.done) }) }

// Result is how the work under a lease ended.
type Result struct {
	Result      string // success, failure or cancelled
	FailureStep string
	ExitCode    *int
}

// Release stops the heartbeat, waits for it, and frees the lock with
// result. It returns an error wrapping ledger.ErrLost if the lock was lost
// (*ledger.NotHolderError, *DeadlineError), even when it could still free
// it: the work ran on without the lock for a while; so too when another
// process released the holding under its request id before the lease
// noticed. After a loss at the
// deadline it frees the lock only when the ledger answered (the loss is
// recorded) and only until the lease lets go (half the margin after the
// deadline), so that a holder cut off from its ledger returns promptly; the
// ledger then lets the lock go by its TTL, and RecordLoss records the loss
// once the ledger answers again. Calling it again is a no-op.
func (s *Lease) Release(ctx context.Context, r Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil
	}
	s.stop()
	s.wg.Wait()
	s.released = true
	defer s.markDone()
	var taken *ledger.NotHolderError
	if errors.As(s.Err(), &taken) {
		// The ledger already showed another holder, and the loss is
		// recorded: a release could only be refused.
		return s.Err()
	}
	req := ledger.ReleaseRequest{Lock: s.acq.Lock, Identity: s.id, Result: r.Result, FailureStep: r.FailureStep, ExitCode: r.ExitCode,
		FencingToken: s.acq.FencingToken}
	// A busy ledger is passing: keep trying, with backoff, for as long as the
	// lock itself would last, so that the result is recorded.
	deadline := s.clock.Now().Add(max(s.ttl, 3*s.l.BusyTimeout()))
	var expired *DeadlineError
	if errors.As(s.Err(), &expired) {
		if s.UnrecordedLoss() != nil {
			return s.Err()
		}
		deadline = s.letGo()
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline.Sub(s.clock.Now()))
		defer cancel()
	}
	log := s.l.Logger()
	retry := awayRetry
	for first := true; ; first = false {
		out, err := s.l.Release(ctx, req)
		if err == nil && first && !out.Released && out.ReleasedSeq > 0 && expired == nil {
			// Released under this request id, and not by this lease: by
			// another process, before this one noticed.
			var taken *ledger.NotHolderError
			if errors.As(s.l.CheckHolding(ctx, s.acq.Lock, s.acq.RequestID, s.acq.FencingToken), &taken) {
				s.markLost(taken)
				return taken
			}
		}
		if err == nil {
			return s.Err() // nil unless lost at the deadline
		}
		if !ledger.IsTransient(err) || s.clock.Now().After(deadline) || ctx.Err() != nil {
			if expired != nil {
				// The loss is what the caller must hear; the ledger lets the
				// lock go by its TTL, or someone has taken it meanwhile.
				log.Warn("could not release the lock lost at its deadline", "lock", s.acq.Lock, "err", err)
				return s.Err()
			}
			if !ledger.IsTransient(err) {
				err = s.whoEnded(ctx, err)
				s.markLost(err)
			}
			return err
		}
		log.Warn("release failed; retrying", "lock", s.acq.Lock, "err", err)
		if retry.Wait(ctx) != nil {
			if expired != nil {
				return s.Err()
			}
			return err
		}
	}
}

// UnrecordedLoss is the loss at the deadline that the ledger could not
// record yet (see RecordLoss); nil when the lease was not lost at its
// deadline or the loss is recorded.
func (s *Lease) UnrecordedLoss() *DeadlineError {
	var expired *DeadlineError
	if !errors.As(s.Err(), &expired) {
		return nil
	}
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.traced {
		return nil
	}
	return expired
}

// RecordLoss records the loss at the deadline that the ledger could not
// take when it happened (heartbeat_failed with lock_lost), as soon as the
// ledger answers again, trying until ctx ends; nil when there is nothing
// left to record.
func (s *Lease) RecordLoss(ctx context.Context) error {
	lost := s.UnrecordedLoss()
	if lost == nil {
		return nil
	}
	if err := RecordLoss(ctx, s.l, s.acq.Lock, s.id, max(lost.Failures, 1), lost.Error()); err != nil {
		return err
	}
	s.dmu.Lock()
	s.traced = true
	s.dmu.Unlock()
	return nil
}

// awayRetry is the wait between a release's or a loss record's tries
// while the ledger is away, drawn at random below each doubling delay so
// that the hosts a failover cut off all at once do not come back in step.
var awayRetry = backoff.Backoff{Min: 50 * time.Millisecond, Max: time.Second, Jitter: true}

// RecordLoss appends heartbeat_failed with lock_lost for id's lock,
// retrying whatever the ledger answers (a database that is away may fail
// in any way), with backoff, until it is recorded or ctx ends.
func RecordLoss(ctx context.Context, l *ledger.Ledger, lock string, id ledger.Identity, failures int, cause string) error {
	return recordLost(ctx, l, lock, id, failures, cause, awayRetry,
		func(error) bool { return false })
}

// recordLost appends heartbeat_failed with lock_lost for id's lock, waiting
// by retry between tries, until it is recorded, ctx ends, or giveUp says
// so of the ledger's answer.
func recordLost(ctx context.Context, l *ledger.Ledger, lock string, id ledger.Identity, failures int, cause string,
	retry backoff.Backoff, giveUp func(error) bool) error {
	for {
		err := l.RecordHeartbeatFailure(ctx, lock, id, failures, cause, true)
		if err == nil || giveUp(err) || retry.Wait(ctx) != nil {
			return err
		}
	}
}

// RecordJobProcesses records what was done to the leftover processes of a
// job (this lease's or the one it superseded) as job_processes on its lock.
func (s *Lease) RecordJobProcesses(ctx context.Context, p events.JobProcessesPayload) error {
	return s.l.RecordJobProcesses(ctx, s.acq.Lock, s.id, p)
}
