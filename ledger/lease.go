package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// Lease defaults.
const (
	// MaxHeartbeatInterval caps the heartbeat interval: min(ttl/3, 30s).
	MaxHeartbeatInterval = 30 * time.Second
	// HeartbeatFailuresBeforeEvent is how many passing failures in a row
	// write heartbeat_failed (tower-fleet §5.4).
	HeartbeatFailuresBeforeEvent = 3
)

// DefaultLossMargin is how long before its TTL runs out a lease whose
// heartbeats stopped getting through counts itself lost: a quarter of the
// TTL. The TTL is judged by the ledger from the time it committed the last
// heartbeat, which is no earlier than the holder's send time for it, so a
// holder that gives up at send time + TTL − margin (on its monotonic clock)
// has the margin to stop its job before anyone else may take the lock. Half
// of it goes to stopping the job (run: TERM, KILL after at most margin/2)
// and recording the loss; the rest covers a late timer, a paused process
// and clocks that run at slightly different rates. A quarter, not a fixed
// time, because all of these grow with how coarse the TTL is chosen, and it
// still leaves, with the default interval (ttl/3), time for two more
// heartbeat attempts after one is missed.
func DefaultLossMargin(ttl time.Duration) time.Duration { return ttl / 4 }

type leaseConfig struct {
	req       AcquireRequest
	supersede bool
	wait      time.Duration
	interval  time.Duration
	margin    time.Duration
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
// is poked (SIGUSR1) so that it notices at once and stops its job; the new
// job should start only once that has happened (Lease.AwaitSuperseded).
func WithSupersede() LeaseOption {
	return func(c *leaseConfig) error { c.supersede = true; return nil }
}

// WithReclaim takes the lock over from another process holding it under
// the same request id (see AcquireRequest.Reclaim).
func WithReclaim() LeaseOption {
	return func(c *leaseConfig) error { c.req.Reclaim = true; return nil }
}

// WithShared makes the lease a shared holding: with limit 0 one of any
// number of shared holders (a reader), else one of at most limit holders
// (a semaphore slot). See AcquireRequest.Shared and Limit.
func WithShared(limit int64) LeaseOption {
	return func(c *leaseConfig) error { c.req.Shared, c.req.Limit = true, limit; return nil }
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

// WithLossMargin sets how long before the TTL runs out (counted from the
// send time of the last successful heartbeat) the lease counts itself lost
// when no heartbeat gets through; default DefaultLossMargin(ttl). The
// heartbeat interval plus the margin must be shorter than the TTL, or no
// heartbeat could succeed in time.
func WithLossMargin(d time.Duration) LeaseOption {
	return func(c *leaseConfig) error {
		if d <= 0 {
			return events.Invalid("loss margin", d.String(), "must be positive")
		}
		c.margin = d
		return nil
	}
}

// Lease is a lock held by this process and kept alive by a heartbeat
// goroutine until Release. Lost is closed if the lock is lost: the ledger
// shows another holder, or no heartbeat succeeded before the local
// deadline (see DeadlineError), which a timer enforces even while a
// heartbeat call hangs.
type Lease struct {
	l        *Ledger
	acq      *Acquisition
	id       Identity
	ttl      time.Duration
	interval time.Duration
	margin   time.Duration

	lost     chan struct{}
	poke     chan struct{}
	lostOnce sync.Once
	lostErr  error

	// dmu guards the deadline state, shared by the heartbeat goroutine and
	// the watchdog; renewed tells the watchdog that the deadline moved.
	dmu      sync.Mutex
	lastOK   time.Time // send time of the last successful heartbeat (or the acquire), monotonic
	failures int       // heartbeat calls failed since lastOK
	lastErr  error     // the last of them
	traced   bool      // the deadline loss is recorded in the ledger
	renewed  chan struct{}

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
	if c.margin == 0 {
		c.margin = DefaultLossMargin(c.req.TTL)
	}
	if c.interval+c.margin >= c.req.TTL {
		return nil, events.Invalid("loss margin", c.margin.String(),
			fmt.Sprintf("plus the heartbeat interval %s must be shorter than the ttl %s", c.interval, c.req.TTL))
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
	s := &Lease{l: l, acq: a, ttl: c.req.TTL, interval: c.interval, margin: c.margin, lost: make(chan struct{}), poke: make(chan struct{}, 1),
		renewed: make(chan struct{}, 1), lastOK: a.sent,
		id: Identity{RequestID: a.RequestID, Actor: a.Record.Actor, PID: a.Record.PID}}
	if a.Already {
		// Nothing was renewed: the lock runs on its last heartbeat.
		// Its age is measured on the clock that stamped it (the
		// database's, on PostgreSQL), at the decision.
		if hb, err := a.Record.HeartbeatTime(); err == nil && !a.at.IsZero() && hb.Before(a.at) {
			s.lastOK = a.sent.Add(-a.at.Sub(hb))
		}
	}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	s.wg.Add(2)
	go s.heartbeat(hctx)
	go s.watch(hctx)
	return s, nil
}

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
		t := time.NewTimer(time.Until(s.deadline()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.lost:
			t.Stop()
			return
		case <-s.renewed:
			t.Stop()
			continue
		case <-t.C:
		}
		s.dmu.Lock()
		if time.Now().Before(s.lastOK.Add(s.ttl - s.margin)) {
			s.dmu.Unlock() // renewed just now
			continue
		}
		cause := &DeadlineError{Lock: s.acq.Lock, RequestID: s.acq.RequestID, LastOK: s.lastOK, TTL: s.ttl, Margin: s.margin,
			Failures: s.failures, LastErr: s.lastErr}
		// Under dmu, so that no heartbeat counts as a success after this.
		s.markLost(cause)
		s.dmu.Unlock()
		s.l.log.Error("lock lost: no heartbeat got through before the local deadline", "lock", s.acq.Lock, "err", cause)
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
	failures := 0
	unrecorded := 0 // a run of failures that reached the threshold but is not in the ledger yet
	next := s.interval
	for {
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.lost:
			t.Stop()
			return
		case <-t.C:
		case <-s.poke:
			t.Stop()
		}
		// A call still unanswered at the deadline is abandoned: the lease
		// is lost then anyway.
		sent := time.Now()
		cctx, cancel := context.WithDeadline(ctx, s.deadline())
		_, err := s.l.heartbeat(cctx, s.acq.Lock, s.id, failures, s.acq.FencingToken)
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
		case errors.Is(err, ErrLost), errors.Is(err, ErrNotHolder):
			// The ledger shows another holder (heartbeat_failed with lock_lost is recorded).
			s.markLost(err)
			return
		}
		failures++
		s.dmu.Lock()
		s.failures, s.lastErr = failures, err
		s.dmu.Unlock()
		if s.Err() != nil {
			return // the watchdog declared the loss and records it
		}
		s.l.log.Warn("heartbeat failed", "lock", s.acq.Lock, "consecutive", failures, "err", err)
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
		s.l.log.Debug("could not record heartbeat_failed yet", "lock", s.acq.Lock, "err", err)
		return false
	}
	return true
}

// recordLoss retries heartbeat_failed with lock_lost while the ledger is
// busy, until until, even after Release was called: losing a lock should
// leave a trace, but a holder cut off from its ledger must not wait for it
// (the ledger then judges the lock stale by its TTL on its own). It reports
// whether the loss was recorded.
func (s *Lease) recordLoss(failures int, cause string, until time.Time) bool {
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	for {
		err := s.l.RecordHeartbeatFailure(ctx, s.acq.Lock, s.id, failures, cause, true)
		if err == nil {
			return true
		}
		if !IsTransient(err) || ctx.Err() != nil {
			s.l.log.Warn("could not record the lost lock", "lock", s.acq.Lock, "err", err)
			return false
		}
		if sleepCtx(ctx, 50*time.Millisecond) != nil {
			s.l.log.Warn("could not record the lost lock", "lock", s.acq.Lock, "err", err)
			return false
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
// result. It returns an error wrapping ErrLost if the lock was lost
// (*NotHolderError, *DeadlineError), even when it could still free it: the
// work ran on without the lock for a while. After a loss at the deadline
// it frees the lock only when the ledger answered (the loss is recorded)
// and only until the lease lets go (half the margin after the deadline),
// so that a holder cut off from its ledger returns promptly; the ledger
// then lets the lock go by its TTL. Calling it again is a no-op.
func (s *Lease) Release(ctx context.Context, r Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil
	}
	s.stop()
	s.wg.Wait()
	s.released = true
	var taken *NotHolderError
	if errors.As(s.Err(), &taken) {
		// The ledger already showed another holder, and the loss is
		// recorded: a release could only be refused.
		return s.Err()
	}
	req := ReleaseRequest{Lock: s.acq.Lock, Identity: s.id, Result: r.Result, FailureStep: r.FailureStep, ExitCode: r.ExitCode,
		FencingToken: s.acq.FencingToken}
	// A busy ledger is passing: keep trying, with backoff, for as long as the
	// lock itself would last, so that the result is recorded.
	deadline := time.Now().Add(max(s.ttl, 3*s.l.busy))
	var expired *DeadlineError
	if errors.As(s.Err(), &expired) {
		s.dmu.Lock()
		traced := s.traced
		s.dmu.Unlock()
		if !traced {
			return s.Err()
		}
		deadline = s.letGo()
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	backoff := 50 * time.Millisecond
	for {
		_, err := s.l.Release(ctx, req)
		if err == nil {
			return s.Err() // nil unless lost at the deadline
		}
		if expired != nil && (!IsTransient(err) || time.Now().After(deadline) || ctx.Err() != nil) {
			// The loss is what the caller must hear; the ledger lets the
			// lock go by its TTL, or someone has taken it meanwhile.
			s.l.log.Warn("could not release the lock lost at its deadline", "lock", s.acq.Lock, "err", err)
			return s.Err()
		}
		if !IsTransient(err) || time.Now().After(deadline) || ctx.Err() != nil {
			if !IsTransient(err) {
				s.markLost(err)
			}
			return err
		}
		s.l.log.Warn("release failed; retrying", "lock", s.acq.Lock, "err", err)
		if sleepCtx(ctx, backoff) != nil {
			if expired != nil {
				return s.Err()
			}
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
	if a.Stolen && a.NotAwaited == "" && a.Previous != nil && a.Previous.HostID == l.host.ID {
		proc.PokeRunner(a.Previous.PID, l.log)
	}
	return a, nil
}

// supersedeNote returns the steal's note, with why the superseded job
// cannot be awaited from here when it cannot, and that reason.
func (l *Ledger) supersedeNote(h *holding, note string) (string, string) {
	var why string
	switch {
	case h.foreign:
		why = "the superseded holder is another tool's lock: it is not told to stop and not awaited"
	case h.rec.HostID != l.host.ID:
		why = "the superseded job runs on host " + h.rec.HostID + ": it cannot be awaited from here"
	case h.rec.PID != os.Getpid() && proc.Running(h.rec.PID, h.pidStart) && !proc.IsLockledger(h.rec.PID):
		why = fmt.Sprintf("the superseded holder (pid %d) is not a lockledger run: it is not told to stop and not awaited", h.rec.PID)
	default:
		return note, ""
	}
	if note != "" {
		note += "; "
	}
	return clip(note+why, 1024), why
}

// SupersedeNoticeMargin is how long past its own kill grace a superseding
// run waits for the job it superseded: the time that job's runner takes to
// notice (one heartbeat through a possibly busy ledger) before it starts
// stopping its job.
const SupersedeNoticeMargin = 3 * time.Second

// Superseded is what became of the job an acquisition took the lock from.
type Superseded struct {
	RequestID string // the superseded request; "" when none was
	// NotAwaited says why its processes could not be watched from here
	// (another host, another tool's lock, a holder that is not a lockledger
	// run); "" when they were awaited.
	NotAwaited string
	// Earlier are the requests RequestID had itself superseded, directly or
	// through others, that were awaited too (see AwaitSuperseded), newest first.
	Earlier []string
	// Killed lists the processes killed because they outlived the grace
	// (recorded as job_processes, action killed, one event per request).
	Killed []int
}

// maxSupersededChain bounds how many superseded runs, one behind the other,
// AwaitSuperseded follows back.
const maxSupersededChain = 16

// supersededJob is one job a superseding acquisition waits for.
type supersededJob struct {
	requestID string
	runner    int    // its runner's pid; 0 when there is none to await
	start     string // the runner's start time; "" when not recorded
}

// supersededChain lists the jobs acquisition a must wait for: the holder it
// took the lock from and, when that holder had itself taken the lock with
// reason superseded, the holder before it, and so on back (at most
// maxSupersededChain). A run superseded while it still waits for its own
// predecessor never started its command, but that predecessor may still be
// running, and nothing else keeps the newest job from overlapping it. A job
// on another host, or held by a process that is not a lockledger run,
// cannot be awaited and is left out (the immediate one as a.NotAwaited says).
func (l *Ledger) supersededChain(ctx context.Context, a *Acquisition) []supersededJob {
	var chain []supersededJob
	prev, start, before := *a.Previous, a.PreviousPIDStart, a.Seq
	for i := 0; i < maxSupersededChain; i++ {
		seq, acq, stolen, err := acquisitionOf(ctx, l.db, a.Lock, prev.RequestID, before)
		if err != nil {
			l.log.Warn("could not read the runs the superseded one had superseded; awaiting only those found",
				"lock", a.Lock, "request_id", prev.RequestID, "err", err)
		}
		if start == "" && acq != nil {
			start = acq.PIDStart
		}
		awaitable := acq != nil && prev.HostID == l.host.ID &&
			!(prev.PID != os.Getpid() && proc.Running(prev.PID, start) && !proc.IsLockledger(prev.PID))
		if i == 0 {
			awaitable = a.NotAwaited == ""
		}
		if awaitable {
			j := supersededJob{requestID: prev.RequestID, runner: prev.PID, start: start}
			if j.runner == os.Getpid() {
				j.runner = 0 // this process superseded itself: nothing to wait for
			}
			chain = append(chain, j)
		}
		if stolen == nil || stolen.Reason != events.ReasonSuperseded {
			break
		}
		prev, start, before = stolen.PreviousLock, "", seq
	}
	return chain
}

// acquisitionOf reads the lock_acquired or lock_stolen event by which
// requestID last took lock before seq: its seq, its payload, and the
// lock_stolen payload when it was a steal. acq is nil when there is none
// (the request was another tool's lock).
func acquisitionOf(ctx context.Context, q querier, lock, requestID string, before int64) (int64, *events.Acquired, *events.Stolen, error) {
	var seq int64
	var body []byte
	err := q.QueryRowContext(ctx, `SELECT seq, body FROM events WHERE request_id = ? AND lock_name = ?
		AND type IN ('lock_acquired', 'lock_stolen') AND seq < ? ORDER BY seq DESC LIMIT 1`,
		requestID, lock, before).Scan(&seq, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, nil, nil
	}
	if err != nil {
		return 0, nil, nil, err
	}
	_, p, err := events.Decode(body)
	if err != nil {
		return 0, nil, nil, err
	}
	switch p := p.(type) {
	case *events.Acquired:
		return seq, p, nil, nil
	case *events.Stolen:
		return seq, &p.Acquired, p, nil
	}
	return 0, nil, nil, nil
}

// AwaitSuperseded returns once the job this lease took the lock from (with
// WithSupersede) has stopped: its runner's process has exited (or its pid
// names another process now) and no process carries its request id (see
// proc.JobPIDs). Its runner was poked and stops its job within its own kill
// grace; once that runner is gone, what is left of the job gets TERM from
// here, since nobody else will stop it. When that job's run had itself
// superseded another one and was still waiting for it, that older job is
// awaited the same way, and so on back (see supersededChain). After grace
// plus SupersedeNoticeMargin, what is left (the jobs' processes, and their
// runners) is killed and recorded as job_processes. A job on another host,
// or held through another tool's lock or by a process that is not a
// lockledger run, cannot be awaited: NotAwaited says so.
//
// It fails when ctx is done. A lease lost meanwhile (this run superseded in
// turn) keeps waiting, and killing after the grace, all the same: the run
// that took the lock may not be able to await these jobs; the loss is
// returned once they have stopped.
func (s *Lease) AwaitSuperseded(ctx context.Context, grace time.Duration) (Superseded, error) {
	a := s.acq
	if !a.Stolen || a.Previous == nil {
		return Superseded{}, nil
	}
	out := Superseded{RequestID: a.Previous.RequestID, NotAwaited: a.NotAwaited}
	chain := s.l.supersededChain(ctx, a)
	ids := make([]string, 0, len(chain))
	for _, j := range chain {
		ids = append(ids, j.requestID)
		if j.requestID != out.RequestID {
			out.Earlier = append(out.Earlier, j.requestID)
		}
	}
	if len(chain) == 0 {
		return out, nil
	}
	deadline := time.Now().Add(grace + SupersedeNoticeMargin)
	watch := proc.NewWatch(ids...)
	termed := map[int]bool{}
	for {
		live := watch.Look()
		runners := map[string]bool{} // request id -> its runner still runs
		for _, j := range chain {
			if runnerRunning(j.runner, j.start) {
				runners[j.requestID] = true
			}
		}
		if len(live) == 0 && len(runners) == 0 {
			return out, s.Err()
		}
		for _, pid := range live {
			// A job whose runner is gone has nobody else to stop it.
			if !runners[watch.JobOf(pid)] && !termed[pid] {
				termed[pid] = true
				watch.Signal(pid, unix.SIGTERM)
			}
		}
		if time.Now().After(deadline) {
			break
		}
		proc.Pause(ctx, true)
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	killed := killJobs(chain, watch)
	for _, j := range chain {
		pids := killed[j.requestID]
		if len(pids) == 0 {
			continue // it ended between the last look and the KILL
		}
		out.Killed = append(out.Killed, pids...)
		note := fmt.Sprintf("the superseded job outlived the grace (%s, and %s for its runner to notice) and was killed",
			grace, SupersedeNoticeMargin)
		if j.requestID != out.RequestID {
			note = fmt.Sprintf("a job superseded before %s, which was still waiting for it to stop, outlived the grace (%s, and %s for its runner to notice) and was killed",
				out.RequestID, grace, SupersedeNoticeMargin)
		}
		if err := s.RecordJobProcesses(context.WithoutCancel(ctx), events.JobProcessesPayload{
			JobRequestID: j.requestID, PIDs: pids, Action: events.JobKilled, Note: note}); err != nil {
			s.l.log.Error("could not record the killed job processes", "lock", s.acq.Lock, "pids", pids, "err", err)
		}
	}
	slices.Sort(out.Killed)
	return out, s.Err()
}

// killJobs KILLs the jobs' runners (each if still the process started at
// its start) and their processes, until none is left or proc.KillSettle has
// passed, and returns those it killed by request id, sorted.
func killJobs(chain []supersededJob, watch *proc.Watch) map[string][]int {
	killed := map[string][]int{}
	seen := map[int]bool{}
	add := func(id string, pid int) {
		if !seen[pid] {
			seen[pid] = true
			killed[id] = append(killed[id], pid)
		}
	}
	until := time.Now().Add(proc.KillSettle)
	for {
		live := watch.Look()
		var up []supersededJob
		for _, j := range chain {
			if runnerRunning(j.runner, j.start) {
				up = append(up, j)
			}
		}
		if (len(up) == 0 && len(live) == 0) || time.Now().After(until) {
			break
		}
		for _, j := range up {
			add(j.requestID, j.runner)
			proc.SignalIf(j.runner, unix.SIGKILL, func() bool { return runnerRunning(j.runner, j.start) })
		}
		for _, pid := range live {
			add(watch.JobOf(pid), pid)
			watch.Signal(pid, unix.SIGKILL)
		}
		proc.Pause(context.Background(), false)
	}
	for _, pids := range killed {
		slices.Sort(pids)
	}
	return killed
}

// runnerRunning reports whether a superseded runner still runs: its pid
// names the process started at start or, when that start time was not
// recorded, some lockledger process.
func runnerRunning(pid int, start string) bool {
	return proc.Running(pid, start) && (start != "" || proc.IsLockledger(pid))
}

// RecordJobProcesses records what was done to the leftover processes of a
// job (this lease's or the one it superseded) as job_processes on its lock.
func (s *Lease) RecordJobProcesses(ctx context.Context, p events.JobProcessesPayload) error {
	return s.l.RecordJobProcesses(ctx, s.acq.Lock, s.id, p)
}
