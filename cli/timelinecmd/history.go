package timelinecmd

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/eventfmt"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

type historyOptions struct {
	g      *invocation.Globals
	lock   string
	format string
	invocation.TimeRange
	limit  int
	before int64
}

var historyListing = invocation.Listing{
	Use:   "history NAME",
	Short: "Print every event of one lock, oldest first",
}

func NewHistory(g *invocation.Globals) *cobra.Command {
	o := &historyOptions{g: g}
	cmd := historyListing.Of(&cobra.Command{
		Long: `Print one lock's events in log order: who acquired, renewed, stole,
released it, whose heartbeats failed and who was blocked. Same formats as
timeline (history NAME is timeline --lock NAME; --json is --format json).
--limit N prints only the newest N of them (still oldest first), and
--before SEQ only those before seq SEQ: the page before one printed is
--before its first seq. history only reads.`,
		Example: `  lockledger history deploy-prod
  lockledger history deploy-prod --since 24h --format csv
  lockledger history deploy-prod --limit 50
  lockledger history deploy-prod --limit 50 --before 81234`,
		Args: invocation.ExactlyOneLock,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.lock = args[0]
			if err := eventfmt.JSONFormat(cmd, o.g.JSON, &o.format); err != nil {
				return err
			}
			return runHistory(cmd.Context(), o)
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&o.Since, "since", "", "from this time on (RFC 3339, or a duration ago: 2h)")
	fl.StringVar(&o.Until, "until", "", "up to this time (RFC 3339, or a duration ago)")
	fl.StringVar(&o.format, "format", eventfmt.FormatTable, "table, json, jsonl or csv")
	fl.IntVar(&o.limit, "limit", 0, "only the newest N events (0: all)")
	fl.Int64Var(&o.before, "before", 0, "only events before this seq (the first seq of the page after)")
	return cmd
}

func runHistory(ctx context.Context, o *historyOptions) error {
	if err := events.ValidateLockName(o.lock); err != nil {
		return err
	}
	if o.limit < 0 {
		return events.Invalid("--limit", strconv.Itoa(o.limit), "must be 0 (all) or more")
	}
	if o.before < 0 {
		return events.Invalid("--before", strconv.FormatInt(o.before, 10), "must be a seq, 1 or more")
	}
	since, until, err := o.TimeRange.Parse(time.Now())
	if err != nil {
		return err
	}
	f := replay.Filter{Lock: o.lock, Since: since, Until: until, Last: o.limit}
	switch {
	case o.before == 1:
		// No event comes before the first: a range that holds none (a
		// ToSeq of 0 would bound nothing).
		f.FromSeq, f.ToSeq = 2, 1
	case o.before > 1:
		f.ToSeq = o.before - 1
	}
	return printEvents(ctx, o.g, f, o.format, false)
}
