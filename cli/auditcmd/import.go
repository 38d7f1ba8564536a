package auditcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

type importOptions struct {
	g            *invocation.Globals
	from         string
	acceptBroken bool
}

var importListing = invocation.Listing{
	Use:   "import --from ROOT --database URL",
	Short: "Move a ledger from ROOT/ledger.db into a PostgreSQL database, every hash kept",
}

func NewImport(g *invocation.Globals) *cobra.Command {
	o := &importOptions{g: g}
	cmd := importListing.Of(&cobra.Command{
		Long: `Copy the whole ledger at --from (its id, every event byte for byte, the
stored Merkle hashes, the signed checkpoints and the locks table) into the
new, empty ledger at --database, then verify it there. The chain goes on
where it stopped: the same ledger id, the same hashes, fencing tokens that
keep increasing. The source's writer lock is held while it copies, so
nothing is appended there meanwhile; afterwards point every writer at
--database (LOCKLEDGER_DATABASE_URL). The source is left as it was. Keep
--root the same as --from and the lock files stay where they are; with
another --root, project places this host's lock files there (recorded).

The source is verified first: a source whose event log is damaged is
refused, exit 1, naming the first bad seq, and nothing is copied.
--accept-broken-chain copies it as it now reads, and the project run that
follows records that the damage was accepted (ledger_projected,
broken_chain_accepted). The copy is one transaction: a failure leaves
--database empty, and the import can be run again.`,
		Example: `  lockledger import --from /var/lib/lockledger --database postgres://lockledger@db/locks`,
		Args:    invocation.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runImport(cmd.Context(), o) },
	})
	cmd.Flags().StringVar(&o.from, "from", "", "the root of the SQLite ledger to move (required)")
	cmd.Flags().BoolVar(&o.acceptBroken, "accept-broken-chain", false, "copy a source whose event log is damaged, as it reads (recorded)")
	return cmd
}

func runImport(ctx context.Context, o *importOptions) error {
	if o.from == "" {
		return &invocation.UsageError{Err: fmt.Errorf("import: --from: is required (the root of the ledger to move)")}
	}
	if o.g.Database == "" {
		return &invocation.UsageError{Err: fmt.Errorf("import: --database: is required (the PostgreSQL database to move the ledger into; or LOCKLEDGER_DATABASE_URL)")}
	}
	// The source is opened as a writer only to hold its writer mutex: it
	// signs nothing and pins nothing.
	busy, err := invocation.BusyTimeout()
	if err != nil {
		return err
	}
	from, err := ledger.Open(ctx, o.from, append([]ledger.Option{ledger.WithLogger(o.g.Log), ledger.MustExist(), ledger.Unsigned()}, busy...)...)
	if err != nil {
		return err
	}
	defer o.g.Finish(from)
	source, err := from.Verify(ctx)
	if err != nil {
		return err
	}
	if !source.OK && !o.acceptBroken {
		bad := source.FirstBad
		return fmt.Errorf("import: %s does not verify (%w): first bad seq %d, %s (%s; %d %s in all); nothing was copied: "+
			"`lockledger verify --root %s` shows the damage, `lockledger import --accept-broken-chain` copies it anyway (recorded)",
			from.Source(), ledger.ErrBrokenChain, bad.Seq, bad.Kind, bad.Detail, source.ProblemCount,
			termtext.Plural(source.ProblemCount, "problem", "problems"), from.Root())
	}
	// The root and the trust store pin the ledger imported, never the
	// empty one it replaces.
	to, err := o.g.Open(ctx, invocation.Writes, ledger.WithPin(store.PinSkip))
	if err != nil {
		return err
	}
	rep, err := to.Import(ctx, from)
	if err == nil && (to.Root() != from.Root() || !source.OK) {
		// This host's lock files of the locks it holds go to the new root;
		// an accepted damage is recorded.
		opts := []ledger.ProjectOption{ledger.ProjectAs(ledger.Identity{PID: os.Getppid()})}
		if !source.OK {
			opts = append(opts, ledger.AcceptBrokenChain())
		}
		_, err = to.Project(ctx, opts...)
	}
	kept := false
	if err == nil {
		kept, err = headKept(ctx, to, rep)
	}
	o.g.Finish(to)
	if err != nil {
		return err
	}
	check, err := o.g.Verify(ctx)
	if err != nil {
		return err
	}
	return o.g.Answer(struct {
		*ledger.ImportReport
		Verify *verify.Report `json:"verify"`
	}{rep, check}, (check.OK || !source.OK) && kept, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		termtext.Fprintf(tw, "import: %s -> %s\n", from.Source(), to.Source())
		termtext.Fprintf(tw, "  ledger id\t%s\n", rep.LedgerID)
		termtext.Fprintf(tw, "  events\t%d (head seq %d, %s)\n", rep.Events, rep.HeadSeq, rep.HeadHash)
		termtext.Fprintf(tw, "  checkpoints\t%d\n", rep.Checkpoints)
		termtext.Fprintf(tw, "  locks\t%d\n", rep.Locks)
		if !source.OK {
			termtext.Fprintf(tw, "  damage\tfirst bad seq %d, %s: copied as it reads (--accept-broken-chain)\n", source.FirstBad.Seq, source.FirstBad.Kind)
		}
		tw.Flush()
		printReport(w, check)
	})
}

// headKept reports whether the imported head is still in the ledger at
// its seq: the import's own project run appends after it.
func headKept(ctx context.Context, l *ledger.Ledger, rep *ledger.ImportReport) (bool, error) {
	if rep.HeadSeq == 0 {
		return true, nil
	}
	h, err := l.HashAt(ctx, rep.HeadSeq)
	return h == rep.HeadHash, err
}
