package lease

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

// MaxHeartbeatInterval caps the heartbeat interval: min(ttl/3, 30s).
const MaxHeartbeatInterval = 30 * time.Second

// DefaultTTL is a lease's TTL when its request has none (and run's):
// a lease heartbeats, so its TTL need only outlast a few heartbeats, and
// a crashed holder's lock is free that long after its last one (a shared
// store's other hosts cannot probe its pid). At 45 s the heartbeat comes
// every 15 s and the local deadline is 33.75 s after the last one got
// through: one heartbeat that waits out a busy database (the ledger's 10 s
// busy timeout) still leaves time for a retry (every ttl/10) before it.
const DefaultTTL = 45 * time.Second

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

type config struct {
	supersede bool
	wait      time.Duration
	interval  time.Duration
	margin    time.Duration
	grace     time.Duration
	observe   WaitObserver
	checks    <-chan os.Signal
	clock     Clock
}

// Option configures Acquire beyond its request: how long to wait, how to
// heartbeat, and what to do to the holder the lease takes the lock from.
type Option func(*config) error

// WithSupersede takes an active lock from its current holder, an older run
// of the same job (see ledger.Supersede). The new job should start only
// once the superseded one has stopped (Lease.AwaitSuperseded).
func WithSupersede() Option {
	return func(c *config) error { c.supersede = true; return nil }
}

// WithKillGrace is how long the job of a stale holder taken over by force
// (AcquireRequest.Force) may act on TERM before it is killed (default
// DefaultTakeOverGrace; see StopTakenOver).
func WithKillGrace(d time.Duration) Option {
	return duration("kill grace", d, false, func(c *config) { c.grace = d })
}

// duration is the option that sets a duration named field with set, once
// it is checked not to be negative (or, with positive, to be positive).
func duration(field string, d time.Duration, positive bool, set func(*config)) Option {
	return func(c *config) error {
		switch {
		case positive && d <= 0:
			return events.Invalid(field, d.String(), "must be positive")
		case d < 0:
			return events.Invalid(field, d.String(), "must not be negative")
		}
		set(c)
		return nil
	}
}

// WithWait keeps trying while the lock is held, for at most d. Without it,
// a context deadline is the limit; without either, one attempt is made.
func WithWait(d time.Duration) Option {
	return duration("wait", d, false, func(c *config) { c.wait = d })
}

// WithWaitObserver hears about each blocked attempt while waiting.
func WithWaitObserver(f WaitObserver) Option {
	return func(c *config) error { c.observe = f; return nil }
}

// Clock is the time a lease keeps: its heartbeats and its local deadline.
type Clock interface {
	Now() time.Time
	// Timer is a channel that receives once d has passed, and a stop
	// that releases the timer.
	Timer(d time.Duration) (<-chan time.Time, func())
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// WithClock replaces the system clock (tests: internal/testclock).
func WithClock(c Clock) Option {
	return func(o *config) error { o.clock = c; return nil }
}

// WithChecks makes the lease renew at once, and so notice a lock taken by
// someone else, whenever ch receives: run passes it SIGUSR1, which a newer
// run that superseded it sends.
func WithChecks(ch <-chan os.Signal) Option {
	return func(c *config) error { c.checks = ch; return nil }
}

// WithHeartbeatInterval overrides min(ttl/3, 30s); it must be below the TTL.
func WithHeartbeatInterval(d time.Duration) Option {
	return duration("heartbeat interval", d, true, func(c *config) { c.interval = d })
}

// WithLossMargin sets how long before the TTL runs out (counted from the
// send time of the last successful heartbeat) the lease counts itself lost
// when no heartbeat gets through; default DefaultLossMargin(ttl). The
// heartbeat interval plus the margin must be shorter than the TTL, or no
// heartbeat could succeed in time.
func WithLossMargin(d time.Duration) Option {
	return duration("loss margin", d, true, func(c *config) { c.margin = d })
}

// newConfig applies opts, checks req (its TTL defaulted to DefaultTTL)
// and fills in the defaults that depend on the TTL and on ctx's deadline.
func newConfig(ctx context.Context, req *ledger.AcquireRequest, opts []Option) (config, error) {
	c := config{grace: DefaultTakeOverGrace, clock: systemClock{}}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return c, err
		}
	}
	if req.TTL == 0 {
		req.TTL = DefaultTTL
	}
	if err := req.Validate(); err != nil {
		return c, err
	}
	if d, ok := ctx.Deadline(); ok && c.wait == 0 {
		c.wait = time.Until(d)
	}
	if c.interval == 0 {
		c.interval = min(req.TTL/3, MaxHeartbeatInterval)
	}
	if c.interval >= req.TTL {
		return c, events.Invalid("heartbeat interval", c.interval.String(), "must be shorter than the ttl "+req.TTL.String())
	}
	if c.margin == 0 {
		c.margin = DefaultLossMargin(req.TTL)
	}
	if c.interval+c.margin >= req.TTL {
		return c, events.Invalid("loss margin", c.margin.String(),
			fmt.Sprintf("plus the heartbeat interval %s must be shorter than the ttl %s", c.interval, req.TTL))
	}
	return c, nil
}
