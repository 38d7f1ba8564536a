package timelinecmd

import (
	"cmp"
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

type replayOptions struct {
	g    *invocation.Globals
	asOf string
	lock string
}

var replayListing = invocation.Listing{
	Use:   "replay [--as-of T] [--lock L]",
	Short: "State of every lock at an instant, from the events alone (JSON)",
}

func NewReplay(g *invocation.Globals) *cobra.Command {
	o := &replayOptions{g: g}
	cmd := replayListing.Of(&cobra.Command{
		Long: `Fold the event log up to T (every event with at <= T, in log order) and
print every lock's state then as JSON: {"as_of", "locks": [...]}, one
object per lock named by any event, with its state (free, held, stale)
and, when held, the v1 lock record's fields and the fencing token. Never
reads the locks table: that is what verify compares against. Without
--as-of, every event is folded and states are judged now. replay only reads.`,
		Example: `  lockledger replay --as-of 2025-03-14T10:31:00Z
  lockledger replay --as-of 2h --lock app-prod | jq '.locks[0].state'`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReplay(cmd.Context(), o) },
	})
	cmd.Flags().StringVar(&o.asOf, "as-of", "", "the instant (RFC 3339, or a duration ago: 2h); default now, all events")
	cmd.Flags().StringVar(&o.lock, "lock", "", "only this lock")
	return cmd
}

// replayLock is one lock in replay's answer: lock_name and state, then the
// holder's v1 fields when there is one.
type replayLock struct {
	LockName string `json:"lock_name"`
	State    string `json:"state"`
	*events.Record
	FencingToken int64  `json:"fencing_token,omitempty"`
	StaleSince   string `json:"stale_since,omitempty"`
	LastSeq      int64  `json:"last_seq,omitempty"`
	// Mode, Limit and Holders describe a lock held shared.
	Mode    string         `json:"mode,omitempty"`
	Limit   int64          `json:"limit,omitempty"`
	Holders []sharedAtJSON `json:"holders,omitempty"`
}

// sharedAtJSON is one shared holder at an instant, from replay.
type sharedAtJSON struct {
	State        string        `json:"state"`
	FencingToken int64         `json:"fencing_token"`
	Lock         events.Record `json:"lock"`
	StaleSince   string        `json:"stale_since,omitempty"`
}

// sharedAt lists a lock's shared holders judged at t (nil when it has none).
func sharedAt(lk *replay.Lock, t time.Time) (mode string, limit int64, out []sharedAtJSON) {
	if lk == nil || len(lk.Shared) == 0 {
		return "", 0, nil
	}
	for _, h := range lk.Shared {
		o := sharedAtJSON{State: events.StateHeld, FencingToken: h.Token, Lock: h.Record}
		if t.After(h.StaleSince()) {
			o.State, o.StaleSince = events.StateStale, events.FormatTime(h.StaleSince())
		}
		out = append(out, o)
	}
	return events.ModeShared, lk.Limit, out
}

type replayObject struct {
	AsOf  string       `json:"as_of"`
	Locks []replayLock `json:"locks"`
}

func runReplay(ctx context.Context, o *replayOptions) error {
	now := time.Now().UTC()
	var asOf time.Time
	if o.asOf != "" {
		var err error
		if asOf, err = invocation.ParseTime("--as-of", o.asOf, now); err != nil {
			return err
		}
	}
	if o.lock != "" {
		if err := events.ValidateLockName(o.lock); err != nil {
			return err
		}
	}
	st, err := foldAt(ctx, o.g, asOf, o.lock)
	if err != nil {
		return err
	}
	judgeAt := cmp.Or(asOf, now)
	out := replayObject{AsOf: events.FormatTime(judgeAt), Locks: []replayLock{}}
	locks := st.Locks()
	if o.lock != "" && len(locks) == 0 {
		locks = []*replay.Lock{{Name: o.lock}}
	}
	for _, lk := range locks {
		rl := replayLock{LockName: lk.Name, State: lk.StateAt(judgeAt), LastSeq: lk.Last.Seq}
		if lk.Held {
			rec := lk.Holder.Record
			rl.Record, rl.FencingToken = &rec, lk.Holder.Token
			if rl.State == events.StateStale {
				rl.StaleSince = events.FormatTime(lk.Holder.StaleSince())
			}
		}
		rl.Mode, rl.Limit, rl.Holders = sharedAt(lk, judgeAt)
		out.Locks = append(out.Locks, rl)
	}
	if o.g.JSON {
		invocation.WriteJSON(o.g.IO.Out, out)
		return nil
	}
	invocation.WriteJSONIndent(o.g.IO.Out, out, "  ")
	return nil
}

// foldAt is the log folded up to at (zero: all of it), for lock alone when
// one is given, from one read; it says first when the log starts after a
// prune.
func foldAt(ctx context.Context, g *invocation.Globals, at time.Time, lock string) (st *replay.State, err error) {
	err = g.Reading(ctx, func(r *invocation.Reader) error {
		r.NoteArchived(ctx)
		st, err = replay.AsOf(ctx, r.Tx, at, lock)
		return err
	})
	return st, err
}
