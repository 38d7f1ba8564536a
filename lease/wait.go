package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/backoff"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
)

// Backoff bounds for waiting on a held lock: full jitter, each sleep drawn
// from [0, min(WaitBackoffCap, WaitBackoffBase*2^attempt)). A change to the
// lock (its file, or a notification from the database) wakes the waiter
// at once.
const (
	WaitBackoffBase = 20 * time.Millisecond
	WaitBackoffCap  = time.Second
)

// GiveUpFor bounds the last attempt of a wait that ran out or was
// cancelled: the one that records acquire_blocked, and needs the ledger's
// writer for it. A wait of N so ends at about N + GiveUpFor however busy
// the writer is; when that attempt cannot get the writer in time, nothing
// is recorded and Wait returns an *UnrecordedError.
const GiveUpFor = time.Second

// waitRetry is the backoff every Wait starts from (a copy per call).
var waitRetry = backoff.Backoff{Min: WaitBackoffBase, Max: WaitBackoffCap, Jitter: true}

// WaitObserver hears about every blocked attempt while a caller waits.
type WaitObserver func(blocked *ledger.HeldError, waited time.Duration)

// Wait tries req on l until it succeeds, the lock turns out stale or
// invalid, or wait runs out (or ctx ends). Every attempt is the same
// request (one request id, generated once when req has none). Each
// attempt before the last ends with the wait, its wait for the writer
// included: one cut short goes on to the last. Giving up records one
// acquire_blocked event with the time waited, in an attempt of at most
// GiveUpFor, and returns the *ledger.HeldError, or the *ledger.StaleError
// of the attempt that found the lock stale; or an *UnrecordedError when
// that attempt did not get the writer to record it. Attempts between the
// first (which validates the request) and the last (which records
// acquire_blocked) that could only be refused are answered by
// ledger.PeekHeld, without the writer mutex, so that many waiters never
// starve the holder's own release. An exclusive waiter joins the lock's
// queue with its first refused attempt and is served in its turn; every
// ledger.WaiterRenewEvery an attempt goes through TryAcquire instead,
// which renews its place (one acquire_blocked), so that a waiter that dies
// leaves the queue within events.WaiterTTL on any host.
func Wait(ctx context.Context, l *ledger.Ledger, req ledger.AcquireRequest, wait time.Duration, observe WaitObserver) (*ledger.Acquisition, error) {
	start := time.Now()
	deadline := start.Add(wait)
	if req.RequestID == "" {
		req.RequestID = events.NewRequestID(start)
	}
	req.Waiting = true
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) && wait > 0 {
		deadline = d
	}
	var watch store.Waker
	var renewAt time.Time      // when the waiter's place in the queue is due for renewal
	var seen *ledger.HeldError // the last refusal an attempt got
	retry := waitRetry
	defer func() {
		if watch != nil {
			watch.Close()
		}
	}()
	for attempt := 0; ; attempt++ {
		last := wait <= 0 || !time.Now().Before(deadline) || ctx.Err() != nil
		req.RecordBlocked = last
		// The first attempt is made at once: it has waited nothing (making
		// the request id and the rest before it is no wait).
		req.Waited = 0
		if attempt > 0 {
			req.Waited = time.Since(start)
		}
		// A blocked attempt queues the request for the rest of its wait
		// (each record of its place lasts events.WaiterTTL at most).
		req.WaitLeft = 0
		if !last {
			req.WaitLeft = time.Until(deadline)
		}
		givingUp := last && (wait > 0 || ctx.Err() != nil)
		actx, cancel := attemptContext(ctx, last, givingUp, deadline)
		var a *ledger.Acquisition
		var err error
		var held *ledger.HeldError
		// A waiter's place in the lock's queue is a lease: when its renewal
		// is due, the attempt goes through TryAcquire, which renews it.
		if attempt > 0 && !last && len(req.Targets) == 0 && time.Now().Before(renewAt) {
			held = l.PeekHeld(actx, req)
		}
		if held != nil {
			err = held
		} else {
			if a, err = l.TryAcquire(actx, req); err == nil {
				cancel()
				return a, nil
			}
			renewAt = time.Now().Add(ledger.WaiterRenewEvery)
		}
		cut := actx.Err() != nil
		cancel()
		switch {
		case errors.As(err, &held):
			held.Waited = req.Waited
			seen = held
		case givingUp && (cut || ledger.IsTransient(err)):
			if seen == nil {
				// No attempt got the writer (kept from the start): the lock
				// read without it still tells a holder's refusal (exit 3)
				// from a ledger that was only busy.
				seen = peekAtEnd(ctx, l, req)
			}
			if seen != nil {
				seen.Waited = req.Waited
			}
			if cut {
				err = fmt.Errorf("the ledger's writer was still busy %s after the wait's end: %w", GiveUpFor, context.DeadlineExceeded)
			}
			return nil, &UnrecordedError{Held: seen, Err: err}
		case wait <= 0 && !cut && ledger.IsTransient(err):
			// A caller that does not wait found the writer busy for the
			// whole busy timeout: the lock read without it still tells a
			// holder's refusal (exit 3, nothing recorded) from a ledger
			// that was only busy (err itself).
			if held := peekAtEnd(ctx, l, req); held != nil {
				return nil, &UnrecordedError{Held: held, Err: err}
			}
			return nil, err
		case ledger.IsTransient(err) && !last:
			// passing: retry like a held lock
		case cut && !last:
			// Cut by the wait's end, or cancelled (a signal while it
			// renewed its place): the last attempt, next, records the wait.
			continue
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
			watch = l.Watch(req.Lock)
		}
		sleep := min(retry.Next(), time.Until(deadline))
		if due := time.Until(renewAt); due > 0 {
			sleep = min(sleep, due)
		}
		watch.Wait(ctx, sleep)
	}
}

// peekAtEnd is ledger.PeekHeld for a wait that ends without any attempt
// having got the writer, bounded as its last attempt was (GiveUpFor,
// whatever ctx does): nil when the read is not sure.
func peekAtEnd(ctx context.Context, l *ledger.Ledger, req ledger.AcquireRequest) *ledger.HeldError {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), GiveUpFor)
	defer cancel()
	return l.PeekHeld(pctx, req)
}

// attemptContext is the context of one attempt of a wait: ctx until the
// wait's deadline for an attempt before the last; GiveUpFor, whatever ctx
// does meanwhile, for the last one of a wait that ran out or was
// cancelled, which records it; ctx itself for the one attempt of a caller
// that does not wait.
func attemptContext(ctx context.Context, last, givingUp bool, deadline time.Time) (context.Context, context.CancelFunc) {
	switch {
	case givingUp:
		return context.WithTimeout(context.WithoutCancel(ctx), GiveUpFor)
	case !last:
		return context.WithDeadline(ctx, deadline)
	}
	return ctx, func() {}
}
