package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

type projectOptions struct{ g *globals }

func newProject(g *globals) *cobra.Command {
	o := &projectOptions{g: g}
	return &cobra.Command{
		Use:   "project",
		Short: "Rebuild the locks table and the lock files from the events",
		Long: `Replay every event and rebuild the projections from them alone: the locks
table, then every lock file (placed, replaced or removed to match), under
the ledger's writer lock (writers wait while it replays the log). Lock
files that the ledger did not write are left alone. Reports what changed.
Run verify first: a log whose bodies do not decode is refused.`,
		Example: `  lockledger verify || lockledger project`,
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runProject(cmd.Context(), o) },
	}
}

func runProject(ctx context.Context, o *projectOptions) error {
	l, err := o.g.open(ctx, rewrites)
	if err != nil {
		return err
	}
	defer o.g.finish(l)
	rep, err := l.Project(ctx)
	if err != nil {
		return err
	}
	if o.g.json {
		writeJSON(o.g.io.Out, rep)
		return nil
	}
	w := o.g.io.Out
	fmt.Fprintf(w, "project: %d events replayed: %d locks, %d held\n", rep.Events, rep.Locks, rep.Held)
	if !rep.Changed() {
		fmt.Fprintln(w, "  no change: the locks table and the lock files already match the events")
	}
	for _, c := range rep.Rows {
		fmt.Fprintf(w, "  row  %-10s %s (%s)\n", c.Action, c.Lock, c.Detail)
	}
	for _, c := range rep.Files {
		fmt.Fprintf(w, "  file %-10s %s (%s)\n", c.Action, c.Lock, c.Detail)
	}
	printNames(w, "foreign lock files left alone", rep.Foreign)
	printNames(w, "locks held by the ledger with another tool's file at their path (left alone)", rep.Interlopers)
	return nil
}

func printNames(w io.Writer, title string, names []string) {
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:", title)
	for _, n := range names {
		fmt.Fprintf(w, " %s", n)
	}
	fmt.Fprintln(w)
}
