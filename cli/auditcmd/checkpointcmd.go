package auditcmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

var checkpointListing = invocation.Listing{
	Use:   "checkpoint",
	Short: "Sign a checkpoint of the whole log now, store it and copy it to every --witness",
}

func NewCheckpoint(g *invocation.Globals) *cobra.Command {
	return checkpointListing.Of(&cobra.Command{
		Long: `Sign a C2SP tlog-checkpoint of the event log as it stands: origin
lockledger/<ledger id>, the number of events, the RFC 6962 Merkle root of
their leaves, and the signing time, signed as a note with the key of
--signing-key or LOCKLEDGER_SIGNING_KEY. It is stored in the ledger
(table checkpoints), appended to each --witness and sent to each
--witness-url to be cosigned; the signed note is printed.

Writers with a key sign checkpoints on their own too (--checkpoint-every,
--checkpoint-interval); run this from cron to cover idle periods, or
before handing an export to an auditor. It also stores the snapshots of
the folded state that are due and missing (one every 10,000 events, which
who --at, replay --as-of and timeline fold from): writes store them as
the log grows, and on a ledger from before them the first checkpoint
makes them all, in one fold of the log. Exit 1 when a witness cannot be
written, or a --witness-url witness does not cosign (the checkpoint is
stored in the ledger all the same).`,
		Example: `  lockledger checkpoint --signing-key /etc/lockledger/signing.key --witness /mnt/audit/ledger.checkpoints`,
		Args:    invocation.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runCheckpoint(cmd.Context(), g) },
	})
}

func runCheckpoint(ctx context.Context, g *invocation.Globals) error {
	if g.Sign.Key == "" && !g.Trusting() {
		return events.Invalid("--signing-key", "", "is required to sign a checkpoint with --unsigned (or LOCKLEDGER_SIGNING_KEY)")
	}
	return g.Using(ctx, invocation.Rewrites, func(l *ledger.Ledger) error {
		cp, err := l.Checkpoint(ctx)
		if cp != nil {
			// Snapshots only save readers time: one that cannot be stored is
			// said, and the checkpoint stands.
			if serr := l.WriteSnapshots(ctx); serr != nil {
				g.Log.Warn("could not store the snapshots due", "err", serr)
			}
			_ = g.Answer(cp, true, func(w io.Writer) { fmt.Fprint(w, cp.Note) })
		}
		if err != nil && cp != nil && g.JSON {
			g.SayError(err.Error(), "exit_code", invocation.ExitFailure)
			return &invocation.ExitError{Code: invocation.ExitFailure}
		}
		return err
	})
}
