// Package metrics derives Prometheus metrics from a lock ledger's events:
// what each lock holds now, what happened to it (acquisitions, steals,
// releases, lost locks, refusals, failed heartbeats), how long holders
// held and acquirers waited, the newest checkpoint and the last
// verify. It folds the events replay decodes, in seq order, through the
// same fold as timeline, so the numbers agree with timeline's; it keeps
// state per lock, never per event. It writes the Prometheus text format
// and OpenMetrics text itself, so that no exposition library is linked
// into every command.
package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
)

// Fold is the metrics of a prefix of the event log. Update folds the
// events appended since, so a server folds each event once.
type Fold struct {
	holdings *replay.HoldingFold
	locks    map[string]*lockStats // by label value (see label)
	seq      int64
	lastHash string
	verify   *verifyResult
}

// lockStats are one lock's counters and histograms.
type lockStats struct {
	Acquisitions      uint64                       `json:"acquisitions"`
	HeartbeatFailures uint64                       `json:"heartbeat_failures"`
	Lost              uint64                       `json:"lost"`
	Steals            map[string]uint64            `json:"steals,omitempty"`   // by reason
	Releases          map[string]uint64            `json:"releases,omitempty"` // by result
	Refusals          map[string]uint64            `json:"refusals,omitempty"` // by action
	Hold              histogram                    `json:"hold"`
	Wait              [len(waitOutcomes)]histogram `json:"wait"`
}

// waitOutcomes label the wait histogram: what the wait ended in.
var waitOutcomes = [...]string{"acquired", "stolen", "gave_up"}

const (
	waitAcquired = iota // lock_acquired
	waitStolen          // lock_stolen
	waitGaveUp          // acquire_blocked
)

// verifyResult is the last ledger_verified of the ledger itself (not of
// an export file).
type verifyResult struct {
	OK       bool      `json:"ok"`
	Problems int       `json:"problems"`
	At       time.Time `json:"at"`
	Seq      int64     `json:"seq"`
}

// NewFold is the fold before the first event.
func NewFold() *Fold {
	return &Fold{holdings: replay.NewHoldingFold(), locks: map[string]*lockStats{}}
}

// label is a recorded text as a label value: termtext's escape, so that
// no control character, line separator, bidi override or byte that is not
// UTF-8 reaches a terminal or the exposition raw (names that differ only
// there share a label value, and their series are merged).
func label(s string) string { return termtext.Escape(s) }

func (f *Fold) stats(lock string) *lockStats {
	k := label(lock)
	s := f.locks[k]
	if s == nil {
		s = &lockStats{Steals: map[string]uint64{}, Releases: map[string]uint64{}, Refusals: map[string]uint64{},
			Hold: newHistogram(holdBuckets)}
		for i := range s.Wait {
			s.Wait[i] = newHistogram(waitBuckets)
		}
		f.locks[k] = s
	}
	return s
}

// Apply folds one event; events must come in seq order.
//
//   - lock_acquired counts an acquisition; lock_stolen a steal, by reason;
//     lock_released a release, by result; heartbeat_failed a failed
//     heartbeat, and a lost lock when it says the lock is lost;
//     action_refused a refusal, by the action refused.
//   - lock_acquired, lock_stolen and acquire_blocked observe their
//     waited_seconds (0 when absent: the acquirer did not wait, or an
//     older lockledger did not record it) in the wait histogram, by what
//     the wait ended in.
//   - A holding (as replay's HoldingFold, and so timeline, sees it: from
//     the acquisition or steal to the release or steal that ended it)
//     observes its length in the hold histogram when it ends.
//   - ledger_verified of the ledger (not of a file) is the last verify.
func (f *Fold) Apply(ev *replay.Event) {
	f.holdings.Apply(ev)
	for _, h := range f.holdings.Closed {
		f.stats(h.Lock).Hold.observe(h.Ended.Time.Sub(h.Opened.Time).Seconds())
	}
	clear(f.holdings.Closed)
	f.holdings.Closed = f.holdings.Closed[:0]
	f.seq, f.lastHash = ev.Seq, ev.Hash
	if ev.Type.LedgerWide() {
		if ev.Type == events.LedgerVerified && ev.File == "" {
			f.verify = &verifyResult{OK: ev.Result == events.AuditOK, Problems: ev.Problems, At: ev.Time, Seq: ev.Seq}
		}
		return
	}
	s := f.stats(ev.LockName)
	switch ev.Type {
	case events.LockAcquired:
		s.Acquisitions++
		s.Wait[waitAcquired].observe(ev.WaitedSeconds)
	case events.LockStolen:
		s.Steals[label(ev.Reason)]++
		s.Wait[waitStolen].observe(ev.WaitedSeconds)
	case events.LockReleased:
		s.Releases[label(ev.Result)]++
	case events.HeartbeatFailed:
		s.HeartbeatFailures++
		if ev.LockLost {
			s.Lost++
		}
	case events.ActionRefused:
		s.Refusals[label(ev.Action)]++
	case events.AcquireBlocked:
		if ev.Until == "" { // with until, a waiter joined the queue: no wait ended
			s.Wait[waitGaveUp].observe(ev.WaitedSeconds)
		}
	}
}

// Update folds, in the snapshot q, the events appended after the last one
// folded. When the event at the fold's last seq is no longer the one
// folded (another ledger, or a restored copy, behind the same source),
// it starts again from seq 1: the counters reset, as Prometheus expects
// of a restarted source.
func (f *Fold) Update(ctx context.Context, q replay.Querier) error {
	if err := f.Follows(ctx, q); err != nil {
		if !errors.As(err, new(*StaleStateError)) {
			return err
		}
		*f = *NewFold()
	}
	return replay.Scan(ctx, q, replay.Filter{FromSeq: f.seq + 1}, func(ev *replay.Event) error {
		f.Apply(ev)
		return nil
	})
}

// Seq is the seq of the last event folded (0: none).
func (f *Fold) Seq() int64 { return f.seq }
