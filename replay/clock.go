package replay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lockledger/lockledger/events"
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
}

func newVerifyConfig(opts []VerifyOption) verifyConfig {
	c := verifyConfig{clockSkew: DefaultClockSkew}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// ClockSkew sets how far an event's at may fall behind an earlier event's,
// or behind the ledger's created_at, before verify reports it
// (KindTimeBackwards, KindBeforeCreation); DefaultClockSkew otherwise.
// Negative counts as zero.
func ClockSkew(d time.Duration) VerifyOption {
	return func(c *verifyConfig) { c.clockSkew = max(d, 0) }
}

// clock checks that events' times go forward, in a stream of intact,
// schema-valid events in seq order.
type clock struct {
	skew time.Duration
	// created is the ledger's created_at (zero: unknown, not checked).
	created time.Time
	// early: the previous event was before created (one finding per run).
	early bool
	// latest is the latest at since the last step back (zero before the
	// first event), held by seq latestSeq.
	latest    time.Time
	latestSeq int64
}

// check judges one event; order: false when the events before it are out
// of order anyway (a damaged chain), which explains any step back.
func (k *clock) check(c *checker, r *Row, ev *Event, order bool) {
	at := ev.Time
	if !k.created.IsZero() && at.Before(k.created.Add(-k.skew)) {
		if !k.early {
			c.report.Add(Problem{Seq: r.Seq, Line: r.Line, Kind: KindBeforeCreation, Lock: ev.LockName, Detail: fmt.Sprintf(
				"at %s is %s before the ledger's created_at %s (more than the clock tolerance, %s)",
				ev.At, k.created.Sub(at).Round(time.Millisecond), events.FormatTime(k.created), k.skew)})
		}
		k.early = true
	} else {
		k.early = false
	}
	switch {
	case k.latest.IsZero() || at.After(k.latest):
		k.latest, k.latestSeq = at, r.Seq
	case order && at.Before(k.latest.Add(-k.skew)):
		c.report.Add(Problem{Seq: r.Seq, Line: r.Line, Kind: KindTimeBackwards, Lock: ev.LockName, Detail: fmt.Sprintf(
			"at %s is %s earlier than seq %d's at %s (more than the clock tolerance, %s; see verify --clock-skew)",
			ev.At, k.latest.Sub(at).Round(time.Millisecond), k.latestSeq, events.FormatTime(k.latest), k.skew)})
		// Judge what follows against the clock as it now reads: one
		// finding per step back, not one per event until it catches up.
		k.latest, k.latestSeq = at, r.Seq
	}
}

// createdAt reads the ledger's created_at from the meta table. A ledger
// always records it with its id; when it is missing or unreadable the
// events are not checked against it, and the note says so.
func createdAt(ctx context.Context, q Querier) (time.Time, string) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'created_at'`).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, "the meta table has no created_at: events were not checked against the ledger's creation"
	case err != nil:
		return time.Time{}, "the ledger's created_at could not be read (" + err.Error() + "): events were not checked against it"
	}
	t, err := events.ParseTime(v)
	if err != nil {
		return time.Time{}, fmt.Sprintf("the ledger's created_at %q is not a time: events were not checked against it", v)
	}
	return t, ""
}
