package timelinecmd

import (
	"context"
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
history only reads.`,
		Example: `  lockledger history deploy-prod
  lockledger history deploy-prod --since 24h --format csv`,
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
	return cmd
}

func runHistory(ctx context.Context, o *historyOptions) error {
	if err := events.ValidateLockName(o.lock); err != nil {
		return err
	}
	since, until, err := o.TimeRange.Parse(time.Now())
	if err != nil {
		return err
	}
	return printEvents(ctx, o.g, replay.Filter{Lock: o.lock, Since: since, Until: until}, o.format, false)
}
