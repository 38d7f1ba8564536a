// Package backoff is the one wait between retries: a delay that doubles
// from Min to Max, optionally drawn at random below it (full jitter), and
// the one sleep that a context cuts short.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the state of one retry loop. The zero value waits nothing;
// set Min and Max (and Jitter) before the first Next.
type Backoff struct {
	Min, Max time.Duration
	// Jitter draws each wait from [0, delay) instead of waiting the delay,
	// so that many waiters do not retry in step.
	Jitter bool
	cur    time.Duration
}

// Next is the wait before the next retry; each call doubles the delay,
// up to Max.
func (b *Backoff) Next() time.Duration {
	if b.cur == 0 {
		b.cur = b.Min
	} else {
		b.cur = min(2*b.cur, b.Max)
	}
	if b.Jitter && b.cur > 0 {
		return time.Duration(rand.Int64N(int64(b.cur)))
	}
	return b.cur
}

// Wait sleeps Next, or until ctx is done (its error).
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

// Sleep waits d, or until ctx is done (its error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
