package auditcmd

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
)

var signerListing = invocation.Listing{
	Use:   "signer",
	Short: "Register, revoke or list the keys that sign the ledger (a fleet's trust model)",
}

func NewSigner(g *invocation.Globals) *cobra.Command {
	cmd := signerListing.Of(&cobra.Command{
		Long: `A ledger names the keys that sign its checkpoints. Its owner registers
each (signer add): the event signer_added carries the key, a role and the
owner's signed statement of it; signer remove revokes one (signer_removed:
its checkpoints of the log past that event vouch for nothing). Rotating a
key is adding the new one and removing the old.

The first signer add registers the writer's own key as the ledger's owner
(role owner) first; after it only a registered owner adds or removes
signers. A writer counts only the registrations its own key or a key
its trust store pins for the root vouches for: a host pins the owner's
key before its first write. A writer whose key the ledger does not register (once it
registers any) signs its own head but stores no checkpoint: it appends,
promising nothing.

verify trusts every key an owner it trusts registered: a host pins the
owner's key (lockledger trust pin --ledger-id ID --verifier-key KEY), an
auditor gives it with --signers FILE; the checkpoints of any registered
signer then keep the fleet's promise of the next checkpoint, so an idle
host's verify passes on an honest ledger.`,
		Args: invocation.NoArgs,
	})
	var role, actor string
	add := &cobra.Command{
		Use:   "add KEY [--role ROLE]",
		Short: "Register a verifier key (lockledger trust show prints a host's) as a signer of the ledger",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSignerChange(cmd.Context(), g, true, args[0], role, actor)
		},
	}
	add.Flags().StringVar(&role, "role", "host", "what the key signs as: owner (may add and remove signers), or one word of your own")
	remove := &cobra.Command{
		Use:   "remove KEY",
		Short: "Revoke a signer key: its checkpoints past this event vouch for nothing",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSignerChange(cmd.Context(), g, false, args[0], "", actor)
		},
	}
	for _, c := range []*cobra.Command{add, remove} {
		c.Flags().StringVar(&actor, "actor", "", "who acts, as recorded (default $LOCKLEDGER_ACTOR, else $USER)")
	}
	var keysOnly bool
	list := &cobra.Command{
		Use:   "list [--keys]",
		Short: "List the ledger's signers (--keys: the standing keys alone, a --signers FILE for an auditor)",
		Args:  invocation.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runSignerList(cmd.Context(), g, keysOnly) },
	}
	list.Flags().BoolVar(&keysOnly, "keys", false, "print only the keys that stand, one a line")
	cmd.AddCommand(add, remove, list)
	return cmd
}

func runSignerChange(ctx context.Context, g *invocation.Globals, add bool, arg, role, actor string) error {
	key, _, err := verifierKeyText(ctx, "KEY", arg)
	if err != nil {
		return err
	}
	if err := invocation.ValidActor(actor); err != nil {
		return err
	}
	return g.Using(ctx, invocation.Rewrites, func(l *ledger.Ledger) error {
		id := ledger.Identity{Actor: actor, PID: os.Getppid()}
		var seq int64
		verb := "added"
		if add {
			seq, err = l.AddSigner(ctx, id, key, role)
		} else {
			verb = "removed"
			seq, err = l.RemoveSigner(ctx, id, key)
		}
		if err != nil {
			return err
		}
		termtext.Fprintf(g.IO.Out, "signer %s: %s (seq %d)\n", verb, key, seq)
		return nil
	})
}

func runSignerList(ctx context.Context, g *invocation.Globals, keysOnly bool) error {
	// The owner's key a host or an auditor pinned out of band vouches for
	// the ledger's signer events, not the first event's claim.
	ts, err := g.TrustStore()
	if err != nil {
		return err
	}
	pinned, err := ts.PinnedVerifiers(g.Root)
	if err != nil {
		return err
	}
	return g.Using(ctx, invocation.Reads, func(l *ledger.Ledger) error {
		signers, notes, err := l.Signers(ctx)
		if err != nil {
			return err
		}
		switch {
		case g.JSON:
			invocation.WriteJSON(g.IO.Out, struct {
				LedgerID string `json:"ledger_id"`
				Signers  any    `json:"signers"`
				Notes    any    `json:"notes,omitempty"`
			}{l.ID(), signers, notes})
			return nil
		case keysOnly:
			for _, s := range signers {
				if s.Removed == 0 {
					termtext.Fprintf(g.IO.Out, "%s\n", s.Key)
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(g.IO.Out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ROLE\tADDED\tREMOVED\tKEY")
		for _, s := range signers {
			removed := "-"
			if s.Removed > 0 {
				removed = fmt.Sprintf("seq %d", s.Removed)
			}
			termtext.Fprintf(tw, "%s\tseq %d\t%s\t%s\n", s.Role, s.Added, removed, s.Key)
		}
		tw.Flush()
		for _, n := range notes {
			termtext.Fprintf(g.IO.Out, "note: %s\n", n)
		}
		return nil
	}, ledger.WithTrustedKeys(pinned...))
}
