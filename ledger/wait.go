package ledger

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
)

// Backoff bounds for waiting on a held lock: full jitter, each sleep drawn
// from [0, min(WaitBackoffCap, WaitBackoffBase*2^attempt)). A change to the
// lock's file (release, steal) wakes the waiter at once.
const (
	WaitBackoffBase = 20 * time.Millisecond
	WaitBackoffCap  = time.Second
)

// WaitObserver hears about every blocked attempt while a caller waits.
type WaitObserver func(blocked *HeldError, waited time.Duration)

// AcquireWait tries req until it succeeds, the lock turns out stale or
// invalid, or wait runs out (or ctx ends). Every attempt is the same
// request (one request id, generated once when req has none). Giving up
// records one acquire_blocked event with the time waited and returns the
// *HeldError, or the *StaleError of the attempt that found the lock stale.
func (l *Ledger) AcquireWait(ctx context.Context, req AcquireRequest, wait time.Duration, observe WaitObserver) (*Acquisition, error) {
	start := time.Now()
	deadline := start.Add(wait)
	if req.RequestID == "" {
		req.RequestID = events.NewRequestID(l.now())
	}
	req.Waiting = true
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) && wait > 0 {
		deadline = d
	}
	var watch store.Waker
	defer func() {
		if watch != nil {
			watch.Close()
		}
	}()
	for attempt := 0; ; attempt++ {
		last := wait <= 0 || !time.Now().Before(deadline) || ctx.Err() != nil
		req.RecordBlocked = last
		req.Waited = time.Since(start)
		actx := ctx
		if last && ctx.Err() != nil {
			// Giving up because the caller cancelled: still record it.
			var cancel context.CancelFunc
			actx, cancel = context.WithTimeout(context.WithoutCancel(ctx), l.busy)
			defer cancel()
		}
		var a *Acquisition
		var err error
		if held := l.peekHeld(ctx, req, attempt, last); held != nil {
			err = held
		} else if a, err = l.TryAcquire(actx, req); err == nil {
			return a, nil
		}
		var held *HeldError
		switch {
		case errors.As(err, &held):
			held.Waited = req.Waited
		case IsTransient(err) && !last:
			// passing: retry like a held lock
		default:
			return nil, err
		}
		if last {
			return nil, err
		}
		if held != nil && observe != nil {
			observe(held, req.Waited)
		}
		if watch == nil {
			watch = l.store.Watch(req.Lock)
		}
		sleep := jitter(attempt)
		if remain := time.Until(deadline); sleep > remain {
			sleep = remain
		}
		watch.Wait(ctx, sleep)
	}
}

// peekHeld answers a waiter's attempt that could only be refused without
// taking the writer mutex: the lock's row and file, read outside any write
// transaction, show an active holder other than the request, with nothing
// to repair and no extra targets to reconcile. Many waiters would otherwise
// keep the writer mutex busy with attempts doomed to fail, and starve the
// holder's own release. The first attempt (which validates the request)
// and the last (which records acquire_blocked) always go through
// TryAcquire, as does anything peekHeld is not sure of (nil).
func (l *Ledger) peekHeld(ctx context.Context, req AcquireRequest, attempt int, last bool) *HeldError {
	if attempt == 0 || last || len(req.Targets) > 0 {
		return nil
	}
	r, err := loadRow(ctx, l.store.DB(), req.Lock)
	if err != nil {
		return nil
	}
	v, err := l.inspect(req.Lock, r)
	if err != nil || len(v.repairs) > 0 || v.holder == nil || v.interloper {
		return nil
	}
	h := v.holder
	if !h.foreign && h.rec.RequestID == req.RequestID {
		return nil
	}
	now, err := l.judgeTime(ctx)
	if err != nil {
		return nil
	}
	state, job := judge(h, now, l.host, l.probe, req.MaxAge)
	if state != events.StateHeld {
		return nil
	}
	return &HeldError{Lock: req.Lock, Holder: h.rec, Foreign: h.foreign, Corrupt: h.corrupt, JobPIDs: job}
}

func jitter(attempt int) time.Duration {
	ceil := WaitBackoffCap
	if attempt < 16 {
		if c := WaitBackoffBase << attempt; c < ceil {
			ceil = c
		}
	}
	return time.Duration(rand.Int64N(int64(ceil))) + time.Millisecond
}
