package lockcmd

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
)

var listListing = invocation.Listing{
	Use:   "list",
	Short: "List every lock that is not free",
}

func NewList(g *invocation.Globals) *cobra.Command {
	return listListing.Of(&cobra.Command{
		Long: `List held, stale and dead locks, including lock files written by other
tools, and free locks with waiters queued (--json: "queue", as status; and
"behind_pin", as status, on every lock of a ledger this root's pin does not
allow). list only reads: it takes no lock and writes nothing (but upgrades
a ledger written by an older lockledger, where it can). A lock whose file
cannot be read (a symlink, a directory, no permission, no locks directory)
is listed from the ledger alone with a warning, and the others as usual.
A root where nothing was ever recorded (no ledger) is not an empty one:
list says "no ledger at ROOT" and exits 6, and creates nothing there.`,
		Example: `  lockledger list
  lockledger list --json | jq -r '.[] | select(.state=="stale") | .lock_name'`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runList(cmd.Context(), g) },
	})
}

func runList(ctx context.Context, g *invocation.Globals) error {
	return g.Using(ctx, invocation.Reads, func(l *ledger.Ledger) error {
		locks, err := l.List(ctx)
		if err != nil {
			return err
		}
		for _, s := range locks {
			if s.Problem != "" {
				g.Log.Warn("lock file cannot be read; listed from the ledger alone", "lock", s.Name, "problem", s.Problem)
			}
		}
		if g.JSON {
			out := make([]lockObject, 0, len(locks))
			behind := behindPin(l.Behind())
			for _, s := range locks {
				o := statusObject(s)
				o.BehindPin = behind
				out = append(out, o)
			}
			invocation.WriteJSON(g.IO.Out, out)
			return nil
		}
		if len(locks) == 0 {
			g.Log.Info("no locks held")
			return nil
		}
		tw := tabwriter.NewWriter(g.IO.Out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "LOCK\tSTATE\tACTOR\tREQUEST\tPID@HOST\tHELD\tHEARTBEAT\tTTL")
		for _, s := range locks {
			h := s.Holder
			if h == nil && s.State == events.StateFree && s.Problem == "" {
				termtext.Fprintf(tw, "%s\t%s\t-\t(%d queued)\t-\t-\t-\t-\n", s.Name, s.State, len(s.Queue))
				continue
			}
			if h == nil {
				termtext.Fprintf(tw, "%s\t?\t?\t(lock file unreadable)\t?\t?\t?\t?\n", s.Name)
				continue
			}
			if s.Corrupt != nil {
				termtext.Fprintf(tw, "%s\t%s\t-\t%s\t-\t-\t-\t-\n", s.Name, s.State, s.Corrupt)
				continue
			}
			if s.Mode == events.ModeShared {
				for _, x := range s.Shared {
					name := s.Name + " (shared)"
					if s.Limit > 0 {
						name = fmt.Sprintf("%s (%d/%d)", s.Name, len(s.Shared), s.Limit)
					}
					termtext.Fprintf(tw, "%s\t%s\t%s\t%s\t%d@%s\t%s\t%s\t%ds\n", name, x.State, x.Holder.Actor, x.Holder.RequestID,
						x.Holder.PID, x.Holder.HostID, invocation.ShortDuration(x.HeldFor), ago(x.SinceBeat), x.Holder.TTLSeconds)
				}
				continue
			}
			req := h.RequestID
			switch {
			case s.Foreign && l.Behind() != nil:
				req += " (not in the ledger)" // perhaps the ledger's own, from events a restore lost (see stderr)
			case s.Foreign:
				req += " (foreign)"
			}
			if s.Problem != "" {
				req += " (lock file unreadable)"
			}
			ttl := strconv.FormatInt(h.TTLSeconds, 10) + "s"
			if noTTL(s) {
				ttl = "none"
			}
			termtext.Fprintf(tw, "%s\t%s\t%s\t%s\t%d@%s\t%s\t%s\t%s\n", s.Name, s.State, h.Actor, req, h.PID, h.HostID,
				invocation.ShortDuration(s.HeldFor), ago(s.SinceBeat), ttl)
		}
		return tw.Flush()
	})
}
