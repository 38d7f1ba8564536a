package cli

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

type importOptions struct {
	g    *globals
	from string
}

func newImport(g *globals) *cobra.Command {
	o := &importOptions{g: g}
	cmd := &cobra.Command{
		Use:   "import --from ROOT --database URL",
		Short: "Move a ledger from ROOT/ledger.db into a PostgreSQL database, every hash kept",
		Long: `Copy the whole ledger at --from (its id, every event byte for byte, the
stored Merkle hashes, the signed checkpoints and the locks table) into the
new, empty ledger at --database, then verify it there. The chain goes on
where it stopped: the same ledger id, the same hashes, fencing tokens that
keep increasing. The source's writer lock is held while it copies, so
nothing is appended there meanwhile; afterwards point every writer at
--database (LOCKLEDGER_DATABASE_URL). The source is left as it was. Keep
--root the same as --from and the lock files stay where they are; with
another --root, project places this host's lock files there (recorded).`,
		Example: `  lockledger import --from /var/lib/lockledger --database postgres://lockledger@db/locks`,
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runImport(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.from, "from", "", "the root of the SQLite ledger to move (required)")
	return cmd
}

func runImport(ctx context.Context, o *importOptions) error {
	if o.from == "" {
		return &usageError{fmt.Errorf("import: --from: is required (the root of the ledger to move)")}
	}
	if o.g.database == "" {
		return &usageError{fmt.Errorf("import: --database: is required (the PostgreSQL database to move the ledger into; or LOCKLEDGER_DATABASE_URL)")}
	}
	from, err := ledger.Open(ctx, o.from, ledger.WithLogger(o.g.log), ledger.MustExist())
	if err != nil {
		return err
	}
	defer o.g.finish(from)
	to, err := o.g.open(ctx, writes)
	if err != nil {
		return err
	}
	rep, err := to.Import(ctx, from)
	if err == nil && to.Root() != from.Root() {
		// This host's lock files of the locks it holds go to the new root.
		_, err = to.Project(ctx, ledger.ProjectAs(ledger.Identity{PID: os.Getppid()}))
	}
	o.g.finish(to)
	if err != nil {
		return err
	}
	check, err := verifyLedger(ctx, o.g)
	if err != nil {
		return err
	}
	if o.g.json {
		writeJSON(o.g.io.Out, struct {
			*ledger.ImportReport
			Verify *replay.Report `json:"verify"`
		}{rep, check})
	} else {
		tw := tabwriter.NewWriter(o.g.io.Out, 0, 0, 2, ' ', 0)
		termtext.Fprintf(tw, "import: %s -> %s\n", from.Source(), to.Source())
		termtext.Fprintf(tw, "  ledger id\t%s\n", rep.LedgerID)
		termtext.Fprintf(tw, "  events\t%d (head seq %d, %s)\n", rep.Events, rep.HeadSeq, rep.HeadHash)
		termtext.Fprintf(tw, "  checkpoints\t%d\n", rep.Checkpoints)
		termtext.Fprintf(tw, "  locks\t%d\n", rep.Locks)
		tw.Flush()
		printReport(o.g.io.Out, check)
	}
	if !check.OK || check.HeadHash != rep.HeadHash && rep.HeadSeq > 0 {
		return &ExitError{Code: ExitFailure}
	}
	return nil
}
