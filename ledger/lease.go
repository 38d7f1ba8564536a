package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockledger/lockledger/events"
)

// Lease defaults.
const (
	// MaxHeartbeatInterval caps the heartbeat interval: min(ttl/3, 30s).
	MaxHeartbeatInterval = 30 * time.Second
	// HeartbeatFailuresBeforeEvent is how many passing failures in a row
	// write heartbeat_failed (tower-fleet §5.4).
	HeartbeatFailuresBeforeEvent = 3
)

type leaseConfig struct {
	req       AcquireRequest
	supersede bool
	wait      time.Duration
	interval  time.Duration
	observe   WaitObserver
}

// LeaseOption configures Acquire.
type LeaseOption func(*leaseConfig) error

// WithTTL sets the lock's TTL (default DefaultTTL).
func WithTTL(d time.Duration) LeaseOption {
	return func(c *leaseConfig) error { c.req.TTL = d; return ValidateTTL(d) }
}

// WithRequestID sets the request id (default req_<ULID>).
func WithRequestID(id string) LeaseOption {
	return func(c *leaseConfig) error { c.req.RequestID = id; return events.ValidateRequestID(id) }
}

// WithActor sets who acts (default DefaultActor()).
func WithActor(a string) LeaseOption {
	return func(c *leaseConfig) error { c.req.Actor = a; return validText("actor", a, 256, false) }
}

// WithPID records another process as the holder (default: this process).
func WithPID(pid int) LeaseOption {
	return func(c *leaseConfig) error {
		if pid <= 0 {
			return events.Invalid("pid", fmt.Sprint(pid), "must be a positive process id")
		}
		c.req.PID = pid
		return nil
	}
}

// WithIntent records what the holder does, and its version.
func WithIntent(intent, version string) LeaseOption {
	return func(c *leaseConfig) error { c.req.Intent, c.req.IntentVersion = intent, version; return nil }
}

// WithMetadata records key/value pairs with the lock.
func WithMetadata(md map[string]string) LeaseOption {
	return func(c *leaseConfig) error { c.req.Metadata = md; return nil }
}

// WithTargets also projects the lock into other tools' lock files.
func WithTargets(ts ...events.Target) LeaseOption {
	return func(c *leaseConfig) error { c.req.Targets = ts; return nil }
}

// WithMaxAge makes a holder older than d count as stale.
func WithMaxAge(d time.Duration) LeaseOption {
	return func(c *leaseConfig) error {
		if d < 0 {
			return events.Invalid("max age", d.String(), "must not be negative")
		}
		c.req.MaxAge = d
		return nil
	}
}

// WithSupersede takes an active lock from its current holder, an older run
// of the same job (GitClaw's cancel-in-progress), recorded as lock_stolen
// with reason superseded. A holder that is a lockledger process on this host
// is poked (SIGUSR1) so that it notices at once and stops its job.
func WithSupersede() LeaseOption {
	return func(c *leaseConfig) error { c.supersede = true; return nil }
}

// WithForce takes over a stale lock (never an active one).
func WithForce() LeaseOption {
	return func(c *leaseConfig) error { c.req.Force = true; return nil }
}

// WithWait keeps trying while the lock is held, for at most d. Without it,
// a context deadline is the limit; without either, one attempt is made.
func WithWait(d time.Duration) LeaseOption {
	return func(c *leaseConfig) error {
		if d < 0 {
			return events.Invalid("wait", d.String(), "must not be negative")
		}
		c.wait = d
		return nil
	}
}

// WithWaitObserver hears about each blocked attempt while waiting.
func WithWaitObserver(f WaitObserver) LeaseOption {
	return func(c *leaseConfig) error { c.observe = f; return nil }
}

// WithHeartbeatInterval overrides min(ttl/3, 30s); it must be below the TTL.
func WithHeartbeatInterval(d time.Duration) LeaseOption {
	return func(c *leaseConfig) error {
		if d <= 0 {
			return events.Invalid("heartbeat interval", d.String(), "must be positive")
		}
		c.interval = d
		return nil
	}
}

// Lease is a lock held by this process and kept alive by a heartbeat
// goroutine until Release. Lost is closed if the lock is lost: the ledger
// shows another holder, or the TTL ran out without a successful heartbeat.
type Lease struct {
	l        *Ledger
	acq      *Acquisition
	id       Identity
	ttl      time.Duration
	interval time.Duration

	lost     chan struct{}
	poke     chan struct{}
	lostOnce sync.Once
	lostErr  error

	stop     context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	released bool
}

// Acquire takes lock name and starts heartbeating it every min(ttl/3, 30s).
// It fails with *HeldError (ErrHeld) or *StaleError (ErrStale) when the lock
// cannot be had within the wait.
func (l *Ledger) Acquire(ctx context.Context, name string, opts ...LeaseOption) (*Lease, error) {
	c := leaseConfig{req: AcquireRequest{Lock: name, TTL: DefaultTTL}}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.wait == 0 {
		if d, ok := ctx.Deadline(); ok {
			c.wait = time.Until(d)
		}
	}
	if c.interval == 0 {
		c.interval = min(c.req.TTL/3, MaxHeartbeatInterval)
	}
	if c.interval >= c.req.TTL {
		return nil, events.Invalid("heartbeat interval", c.interval.String(), "must be shorter than the ttl "+c.req.TTL.String())
	}
	var a *Acquisition
	var err error
	if c.supersede {
		a, err = l.supersede(ctx, c.req)
	} else {
		a, err = l.AcquireWait(ctx, c.req, c.wait, c.observe)
	}
	if err != nil {
		return nil, err
	}
	s := &Lease{l: l, acq: a, ttl: c.req.TTL, interval: c.interval, lost: make(chan struct{}), poke: make(chan struct{}, 1),
		id: Identity{RequestID: a.RequestID, Actor: a.Record.Actor, PID: a.Record.PID}}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	s.wg.Add(1)
	go s.heartbeat(hctx)
	return s, nil
}

// Lock is the lock's name.
func (s *Lease) Lock() string { return s.acq.Lock }

// RequestID is the holder's request id.
func (s *Lease) RequestID() string { return s.acq.RequestID }

// FencingToken increases strictly with every acquisition of this lock;
// pass it to the resources the lock protects so they can refuse a stale holder.
func (s *Lease) FencingToken() int64 { return s.acq.FencingToken }

// Acquisition is how the lock was taken (stolen, from whom).
func (s *Lease) Acquisition() Acquisition { return *s.acq }

// CheckNow makes the heartbeat goroutine renew at once instead of at its
// next tick; a lock taken by someone else is then noticed immediately.
func (s *Lease) CheckNow() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// Lost is closed when the lock is lost.
func (s *Lease) Lost() <-chan struct{} { return s.lost }

// Err is why the lock was lost (nil while it is held).
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
}

func (s *Lease) heartbeat(ctx context.Context) {
	defer s.wg.Done()
	lastOK := time.Now()
	failures := 0
	unrecorded := 0 // a run of failures that reached the threshold but is not in the ledger yet
	next := s.interval
	for {
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-s.poke:
			t.Stop()
		}
		_, err := s.l.heartbeat(ctx, s.acq.Lock, s.id, failures)
		switch {
		case err == nil:
			if unrecorded > 0 && s.record(ctx, unrecorded, "heartbeats failed, then recovered", false) {
				unrecorded = 0
			}
			lastOK, failures, next = time.Now(), 0, s.interval
			continue
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrLost), errors.Is(err, ErrNotHolder):
			// The ledger shows another holder (heartbeat_failed with lock_lost is recorded).
			s.markLost(err)
			return
		}
		failures++
		s.l.log.Warn("heartbeat failed", "lock", s.acq.Lock, "consecutive", failures, "err", err)
		if time.Since(lastOK) > s.ttl {
			cause := fmt.Errorf("%w: no successful heartbeat for %s (ttl %s): %v", ErrLost, time.Since(lastOK).Truncate(time.Millisecond), s.ttl, err)
			// Tell the holder first, so that it stops its work; then get
			// the loss into the ledger, which may itself be what fails.
			s.markLost(cause)
			s.recordLoss(failures, cause.Error())
			return
		}
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

// record writes heartbeat_failed. The ledger may be the thing that fails;
// the caller tries again at its next heartbeat.
func (s *Lease) record(ctx context.Context, failures int, cause string, lost bool) bool {
	if err := s.l.RecordHeartbeatFailure(ctx, s.acq.Lock, s.id, failures, cause, lost); err != nil {
		s.l.log.Debug("could not record heartbeat_failed yet", "lock", s.acq.Lock, "err", err)
		return false
	}
	return true
}

// recordLoss retries heartbeat_failed with lock_lost while the ledger is
// busy, for at most one more TTL (and no less than the busy timeout), even
// after Release was called: losing a lock must leave a trace.
func (s *Lease) recordLoss(failures int, cause string) {
	ctx, cancel := context.WithTimeout(context.Background(), max(s.ttl, s.l.busy))
	defer cancel()
	for {
		err := s.l.RecordHeartbeatFailure(ctx, s.acq.Lock, s.id, failures, cause, true)
		if err == nil || !IsTransient(err) || ctx.Err() != nil {
			if err != nil {
				s.l.log.Warn("could not record the lost lock", "lock", s.acq.Lock, "err", err)
			}
			return
		}
		if sleepCtx(ctx, 50*time.Millisecond) != nil {
			return
		}
	}
}

// Result is how the work under a lease ended.
type Result struct {
	Result      string // success, failure or cancelled
	FailureStep string
	ExitCode    *int
}

// Release stops the heartbeat, waits for it, and frees the lock with
// result. It returns ErrLost (via *NotHolderError) if the lock was lost.
// Calling it again is a no-op.
func (s *Lease) Release(ctx context.Context, r Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil
	}
	s.stop()
	s.wg.Wait()
	s.released = true
	req := ReleaseRequest{Lock: s.acq.Lock, Identity: s.id, Result: r.Result, FailureStep: r.FailureStep, ExitCode: r.ExitCode}
	// A busy ledger is passing: keep trying, with backoff, for as long as the
	// lock itself would last, so that the result is recorded.
	deadline := time.Now().Add(max(s.ttl, 3*s.l.busy))
	backoff := 50 * time.Millisecond
	for {
		_, err := s.l.Release(ctx, req)
		if err == nil {
			return nil
		}
		if !IsTransient(err) || time.Now().After(deadline) || ctx.Err() != nil {
			if !IsTransient(err) {
				s.markLost(err)
			}
			return err
		}
		s.l.log.Warn("release failed; retrying", "lock", s.acq.Lock, "err", err)
		if sleepCtx(ctx, backoff) != nil {
			return err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// supersede takes lock from its current holder (reason superseded) and
// pokes that holder if it is a lockledger process on this host.
func (l *Ledger) supersede(ctx context.Context, req AcquireRequest) (*Acquisition, error) {
	a, err := l.Steal(ctx, StealRequest{AcquireRequest: req, Supersede: true, Note: "superseded by a newer run"})
	if err != nil {
		return nil, err
	}
	if a.Stolen && a.Reason == events.ReasonSuperseded && a.Previous != nil && a.Previous.HostID == l.host.ID {
		pokeRunner(a.Previous.PID, l.log)
	}
	return a, nil
}
