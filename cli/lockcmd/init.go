package lockcmd

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
)

// initObject is init's --json answer.
type initObject struct {
	// Status is "created", or "exists" when a ledger was there already
	// (nothing was written then).
	Status   string `json:"status"`
	LedgerID string `json:"ledger_id"`
	Source   string `json:"source"`
	Root     string `json:"root"`
}

var initListing = invocation.Listing{
	Use:   "init",
	Short: "Create the ledger (ROOT/ledger.db, or the tables of --database) if there is none",
}

func NewInit(g *invocation.Globals) *cobra.Command {
	return initListing.Of(&cobra.Command{
		Long: `Create an empty ledger: ROOT and ROOT/ledger.db, or with --database the
tables of the PostgreSQL database (run it as the database's owner), with
the ledger's id. Any writing command creates the ledger the same way;
init does it before any lock is taken, so that readers (status, verify,
...) find a ledger, and so that PostgreSQL's grants have tables to name.

On a root or database that already holds a ledger, init says so and
exits 0 without writing anything. --group makes the new root a group
root.`,
		Example: `  lockledger --root /srv/lockledger --group ops init
  lockledger --database postgres://lockledger@db.internal/locks init`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return &invocation.UsageError{Err: errors.New("init: takes no arguments")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runInit(cmd.Context(), g) },
	})
}

func runInit(ctx context.Context, g *invocation.Globals) error {
	status := "exists"
	// --group names what the root must be: a root there already that is
	// not a group root of it is refused, as a writer's open refuses it.
	group, err := g.GroupOption()
	if err != nil {
		return err
	}
	l, err := g.OpenExisting(ctx, group...)
	if errors.Is(err, ledger.ErrOldSchema) {
		// A ledger written by an older lockledger is there: the next
		// writing command upgrades it, init writes nothing.
		where := g.WhereAttr()
		return g.Answer(map[string]any{"status": "exists", "old_schema": true, where[0].(string): where[1]}, true, func(w io.Writer) {
			termtext.Fprintf(w, "init: a ledger written by an older lockledger is already in %s; nothing written (the next writing command upgrades it)\n", where[1])
		})
	}
	if errors.Is(err, ledger.ErrNoLedger) {
		status = "created"
		l, err = g.Open(ctx, invocation.Writes)
	}
	if err != nil {
		return err
	}
	defer g.Finish(l)
	o := initObject{Status: status, LedgerID: l.ID(), Source: l.Source(), Root: l.Root()}
	said := "init: ledger %s is already in %s; nothing written\n"
	if status == "created" {
		said = "init: created ledger %s in %s\n"
	}
	return g.Answer(o, true, func(w io.Writer) { termtext.Fprintf(w, said, o.LedgerID, o.Source) })
}
