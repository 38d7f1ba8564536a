package lease

import (
	"fmt"
	"time"

	"github.com/lockledger/lockledger/ledger"
)

// DeadlineError is a lease lost on its own clock: no heartbeat succeeded
// before its local deadline, LastOK (the send time of the last successful
// heartbeat, or of the acquire) + TTL − Margin. The ledger may still show
// it as the holder; others can take the lock once the TTL has run out by
// the ledger's clock, Margin later at the earliest. It wraps ledger.ErrLost.
type DeadlineError struct {
	Lock      string
	RequestID string
	LastOK    time.Time     // send time of the last successful heartbeat (or of the acquire)
	TTL       time.Duration // the lock's TTL
	Margin    time.Duration // how long before the TTL the holder gives up
	Failures  int           // heartbeat calls that failed since LastOK
	LastErr   error         // the last of them; nil when none returned (hung or none sent)
}

func (e *DeadlineError) Error() string {
	last := ""
	if e.LastErr != nil {
		last = fmt.Sprintf("; last error: %v", e.LastErr)
	} else if e.Failures == 0 {
		last = "; the heartbeat in flight never answered"
	}
	return fmt.Sprintf("lock %s: request %s lost the lock: no successful heartbeat since %s (%d failed); local deadline ttl %s − margin %s = %s after it%s",
		e.Lock, e.RequestID, e.LastOK.UTC().Format(time.RFC3339Nano), e.Failures, e.TTL, e.Margin, e.TTL-e.Margin, last)
}

func (e *DeadlineError) Unwrap() error { return ledger.ErrLost }

// UnrecordedError is a wait that gave up without its acquire_blocked: its
// last attempt could not get the ledger's writer within GiveUpFor (or the
// busy timeout, when shorter); or the one attempt of a caller that does
// not wait, which could not get it within the busy timeout, on a lock the
// read without the writer shows held. Nothing was taken. Held is the refusal of
// the last attempt that got one, or, when none did (the writer was busy
// all along), what the lock read without the writer showed at the end
// (ledger.PeekHeld): nil when it showed no active holder; Err is why the
// record was not made: the writer busy, or the database out of reach.
type UnrecordedError struct {
	Held *ledger.HeldError
	Err  error
}

func (e *UnrecordedError) Error() string {
	if e.Held != nil {
		return e.Held.Error()
	}
	if ledger.IsUnreachable(e.Err) {
		return fmt.Sprintf("ledger unreachable: no attempt of the wait reached the ledger's database (%v)", e.Err)
	}
	return fmt.Sprintf("ledger busy: no attempt of the wait got the ledger's writer (%v)", e.Err)
}

func (e *UnrecordedError) Unwrap() []error {
	if e.Held != nil {
		return []error{e.Held, e.Err}
	}
	return []error{e.Err}
}
