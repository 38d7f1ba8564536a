package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// DefaultClockSkew is how far back an event's at may step without being
// damage. The ledger's writers take turns under one writer lock on one
// host, each reading the clock after taking it, so at never goes back
// unless the clock itself is stepped back (NTP, a VM resumed, a hand):
// steps of a second or so are common, larger ones are not.
const DefaultClockSkew = 2 * time.Second

// VerifyOption adjusts VerifyLedger and VerifyFile: what they check
// against (WithTrust) and how far the clock may step back (ClockSkew).
type VerifyOption func(*verifyConfig)

type verifyConfig struct {
	clockSkew time.Duration
	trust     *Trust
	now       func() time.Time
	keep      *Verified // Keep
	archived  []byte    // FoldingFrom
}

func newVerifyConfig(opts []VerifyOption) verifyConfig {
	c := verifyConfig{clockSkew: DefaultClockSkew, now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// ClockSkew sets how far an event's at may fall behind an earlier event's,
// or behind the ledger's created_at, or run ahead of a later event's,
// before verify reports it (KindTimeBackwards, KindBeforeCreation,
// KindFutureDated); DefaultClockSkew otherwise. Negative counts as zero.
func ClockSkew(d time.Duration) VerifyOption {
	return func(c *verifyConfig) { c.clockSkew = max(d, 0) }
}

// VerifyingClock sets the clock no event may be dated after (by more than
// aheadOfVerifier): time.Now otherwise.
func VerifyingClock(now func() time.Time) VerifyOption {
	return func(c *verifyConfig) {
		if now != nil {
			c.now = now
		}
	}
}

// aheadOfVerifier is how far an event may be dated after the verifying
// clock: at least a minute, since the clock that dated it may be another
// host's (PostgreSQL's), or the clock skew when that is larger.
func aheadOfVerifier(skew time.Duration) time.Duration { return max(skew, time.Minute) }

// jumpsKept is how many forward steps of the clock a check remembers: how
// far back a step back can be traced to the event that ran ahead.
const jumpsKept = 64

// jump is an event dated more than the tolerance after every event before
// it (a quiet spell, or a date set ahead).
type jump struct {
	seq, line int64
	lock, at  string
	when      time.Time
	before    time.Time // the latest time before it
	beforeSeq int64
	ahead     bool // dated after the verifying clock
}

// clock checks that events' times go forward, in a stream of intact,
// schema-valid events in seq order.
type clock struct {
	skew time.Duration
	// now is the verifying clock, read once (zero: not checked).
	now time.Time
	// created is the ledger's created_at (zero: unknown, not checked).
	created time.Time
	// early: the previous event was before created (one finding per run).
	early bool
	// latest is the latest at since the last step back (zero before the
	// first event), held by seq latestSeq.
	latest    time.Time
	latestSeq int64
	// jumps are the last forward steps since the last step back: a ring
	// of njumps, the newest at jumps[(firstJump+njumps-1)%jumpsKept].
	jumps             [jumpsKept]jump
	firstJump, njumps int
	// aheadRun: the previous event was dated after the verifying clock
	// (one finding per run).
	aheadRun bool
	// pending is the first event of the last run dated after the
	// verifying clock, until a step back after it says which is wrong.
	pending *verify.Problem
}

// check judges one event; order: false when the events before it are out
// of order anyway (a damaged chain), which explains any step back.
func (k *clock) check(c *checker, r *Row, ev *Event, order bool) {
	at := ev.Time
	if !k.created.IsZero() && at.Before(k.created.Add(-k.skew)) {
		if !k.early {
			c.report.Add(verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindBeforeCreation, Lock: ev.LockName, Detail: fmt.Sprintf(
				"at %s is %s before the ledger's created_at %s (more than the clock tolerance, %s)",
				ev.At, k.created.Sub(at).Round(time.Millisecond), events.FormatTime(k.created), k.skew)})
		}
		k.early = true
	} else {
		k.early = false
	}
	ahead := !k.now.IsZero() && at.After(k.now.Add(aheadOfVerifier(k.skew)))
	if ahead && !k.aheadRun && k.pending == nil {
		k.pending = &verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindFutureDated, Lock: ev.LockName, Detail: fmt.Sprintf(
			"at %s is %s after the verifying clock (%s; tolerance %s): dated ahead",
			ev.At, at.Sub(k.now).Round(time.Millisecond), events.FormatTime(k.now), aheadOfVerifier(k.skew))}
	}
	k.aheadRun = ahead
	switch {
	case k.latest.IsZero() || at.After(k.latest):
		if !k.latest.IsZero() && at.After(k.latest.Add(k.skew)) {
			if k.njumps == jumpsKept {
				k.firstJump, k.njumps = (k.firstJump+1)%jumpsKept, k.njumps-1
			}
			k.njumps++
			k.jumps[(k.firstJump+k.njumps-1)%jumpsKept] = jump{seq: r.Seq, line: r.Line, lock: ev.LockName, at: ev.At, when: at, before: k.latest,
				beforeSeq: k.latestSeq, ahead: ahead}
		}
		k.latest, k.latestSeq = at, r.Seq
	case order && at.Before(k.latest.Add(-k.skew)):
		// A step back names the event ahead of the verifying clock it
		// steps back from, or is itself the finding.
		k.pending = nil
		switch j := k.ranAhead(at); {
		case j != nil:
			detail := fmt.Sprintf("at %s is %s ahead of seq %d, which follows it at %s, while seq %d before it is at %s (more than the clock tolerance, %s): dated ahead",
				j.at, j.when.Sub(at).Round(time.Millisecond), r.Seq, ev.At, j.beforeSeq, events.FormatTime(j.before), k.skew)
			if r.Seq-1 > j.seq {
				detail += fmt.Sprintf(", and the events after it up to seq %d with it", r.Seq-1)
			}
			c.report.Add(verify.Problem{Seq: j.seq, Line: j.line, Kind: verify.KindFutureDated, Lock: j.lock, Detail: detail})
		default:
			c.report.Add(verify.Problem{Seq: r.Seq, Line: r.Line, Kind: verify.KindTimeBackwards, Lock: ev.LockName, Detail: fmt.Sprintf(
				"at %s is %s earlier than seq %d's at %s (more than the clock tolerance, %s; see verify --clock-skew)",
				ev.At, k.latest.Sub(at).Round(time.Millisecond), k.latestSeq, events.FormatTime(k.latest), k.skew)})
		}
		// Judge what follows against the clock as it now reads: one
		// finding per step back, not one per event until it catches up.
		k.latest, k.latestSeq = at, r.Seq
		k.njumps = 0
	}
}

// end reports an event dated after the verifying clock that no later
// event stepped back from.
func (k *clock) end(r *verify.Report) {
	if k.pending != nil {
		r.Add(*k.pending)
		k.pending = nil
	}
}

// ranAhead is the forward step that an event dated at steps back past,
// when that step is the one out of line: at fits the times before it, and
// it ran further ahead of at than at is after them (a clock stepped back
// after a quiet spell steps back less than the spell lasted). Nil when
// the event dated at is the one out of line.
func (k *clock) ranAhead(at time.Time) *jump {
	for i := k.njumps - 1; i >= 0; i-- {
		j := &k.jumps[(k.firstJump+i)%jumpsKept]
		if at.Before(j.before.Add(-k.skew)) {
			continue
		}
		if j.ahead || (j.when.After(at.Add(k.skew)) && j.when.Sub(at) > at.Sub(j.before)) {
			return j
		}
		return nil
	}
	return nil
}

// createdAt reads the ledger's created_at from the meta table. A ledger
// always records it with its id; when it is missing or unreadable the
// events are not checked against it, and the note says so.
func createdAt(ctx context.Context, q Querier) (time.Time, string) {
	v, ok, err := store.CreatedAt(ctx, q)
	switch {
	case err != nil:
		return time.Time{}, "the ledger's created_at could not be read (" + err.Error() + "): events were not checked against it"
	case !ok:
		return time.Time{}, "the meta table has no created_at: events were not checked against the ledger's creation"
	}
	t, err := events.ParseTime(v)
	if err != nil {
		return time.Time{}, fmt.Sprintf("the ledger's created_at %q is not a time: events were not checked against it", v)
	}
	return t, ""
}
