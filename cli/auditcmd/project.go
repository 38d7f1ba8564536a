package auditcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/archive"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store"
)

type projectOptions struct {
	g            *invocation.Globals
	actor        string
	acceptBroken bool
	rollback     bool
	archives     []string
}

var projectListing = invocation.Listing{
	Use:   "project [--accept-broken-chain] [--accept-rollback] [--archive FILE]...",
	Short: "Rebuild the locks table and the lock files from the events",
}

func NewProject(g *invocation.Globals) *cobra.Command {
	o := &projectOptions{g: g}
	cmd := projectListing.Of(&cobra.Command{
		Long: `Replay every event and rebuild the projections from them alone: the locks
table, then every lock file (placed, replaced or removed to match), under
the ledger's writer lock (writers wait while it replays the log). Reports
what changed.

project first checks the event log as verify does (hash chain, seq,
schemas, columns, replay consistency). While the log is damaged it
refuses, exit 1, naming the first bad seq and the kind of damage, and
changes no projection: projections rebuilt from a forged log would agree
with the forgery and hide it. --accept-broken-chain projects the log as it
now reads anyway, and its events say so.

Every run is recorded, since it reads the whole audit log: one
ledger_projected event with its result (ok, or refused for a damaged log)
and what it changed in counts, after one lock_projected event per lock
whose projections changed, saying what changed. None of them changes a
lock's state.

Lock files of other tools are left alone. An unreadable file in the locks
directory (not a v1 lock, so no tool's holder; it blocks its lock, to fail
safe) is kept aside as NAME.lock.corrupt-<UTC time> beside it (mode 0600,
never replacing a file), and where the ledger holds the lock its own file
is put back.

Each root pins the ledger its host writes to (ROOT/ledger.pin: the ledger
id and the newest head seen). Writers refuse a database that holds another
ledger, or an older state of this one (a restored backup), since fencing
tokens would go backwards there. --accept-rollback goes on from the ledger
found: project rebuilds this root's lock files from it, its
ledger_projected records the pin given up (rollback_accepted), and the root
pins the ledger found.

A pruned ledger's live log starts after its archived events, which the
replay needs: give its archives with --archive, every one from seq 1 (the
last one the archive the last prune recorded). Each is checked on its own
as verify --file checks it, and with the live log as one log, as verify
--archive does; project folds them, then the live log, and the ledger
stays pruned. Archives that are not that log are refused (exit 2) and
nothing changes.`,
		Example: `  lockledger project
  lockledger project --json | jq .recorded`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProject(cmd.Context(), o) },
	})
	cmd.Flags().BoolVar(&o.acceptBroken, "accept-broken-chain", false, "project even while the event log is damaged (recorded on every lock_projected event); a cut tail is a rollback, accepted too")
	cmd.Flags().BoolVar(&o.rollback, "accept-rollback", false, "go on from a ledger other than, or older than, the one this root has pinned (recorded)")
	cmd.Flags().StringArrayVar(&o.archives, "archive", nil, "an archive of a pruned ledger's events (lockledger archive), for the replay (repeatable: every one from seq 1)")
	cmd.Flags().StringVar(&o.actor, "actor", "", "who projects, as recorded (default $LOCKLEDGER_ACTOR, else $USER, else the OS user name)")
	return cmd
}

func runProject(ctx context.Context, o *projectOptions) error {
	var more []ledger.Option
	if o.rollback || o.acceptBroken {
		// A damaged log accepted is a ledger older than, or other than,
		// the one this root pinned: both are recorded.
		more = append(more, ledger.WithPin(store.PinAccept))
	}
	archives, err := projectArchives(ctx, o)
	if err != nil {
		return err
	}
	recorded := false
	if (o.rollback || o.acceptBroken) && o.g.Trusting() {
		done, err := o.g.DropHeads()
		defer func() { done(recorded) }()
		if err != nil {
			return err
		}
	}
	return o.g.Using(ctx, invocation.Rewrites, func(l *ledger.Ledger) error {
		opts := []ledger.ProjectOption{ledger.ProjectAs(ledger.Identity{Actor: o.actor, PID: os.Getppid()})}
		if o.acceptBroken {
			opts = append(opts, ledger.AcceptBrokenChain())
		}
		if len(archives) > 0 {
			opts = append(opts, ledger.ProjectFromArchives(archives...))
		}
		rep, err := l.Project(ctx, opts...)
		recorded = rep != nil // committed: its file changes may have failed after
		if errors.Is(err, archive.ErrMismatch) {
			return events.Invalid("--archive", strings.Join(o.archives, ", "), err.Error())
		}
		if err != nil {
			return err
		}
		return o.g.Answer(rep, true, func(w io.Writer) {
			termtext.Fprintf(w, "project: %d events replayed: %d locks, %d held\n", rep.Events, rep.Locks, rep.Held)
			if b := rep.BrokenChain; b != nil {
				termtext.Fprintf(w, "  the event log is damaged (first bad seq %d, %s): projected as it now reads (--accept-broken-chain)\n", b.Seq, b.Kind)
			}
			if p := rep.RollbackAccepted; p != nil {
				fmt.Fprintf(w, "  rollback accepted: this root had pinned ledger %s at seq %d; it now pins the ledger found (--accept-rollback)\n", p.LedgerID, p.Seq)
			}
			if !rep.Changed() {
				fmt.Fprintln(w, "  no change: the locks table and the lock files already match the events")
			}
			for _, c := range rep.Rows {
				termtext.Fprintf(w, "  row  %-10s %s (%s)\n", c.Action, c.Lock, c.Detail)
			}
			for _, c := range rep.Files {
				termtext.Fprintf(w, "  file %-10s %s (%s)\n", c.Action, c.Lock, c.Detail)
			}
			if rep.RollbackAccepted != nil {
				// The files may be this root's own holders from the events
				// given up: no other tool's to name.
				printNames(w, "lock files the ledger does not hold, left alone and held until their holder is dead or stale "+
					"(perhaps holders from the events the rollback gave up)", rep.Foreign)
			} else {
				printNames(w, "foreign lock files left alone", rep.Foreign)
			}
			printNames(w, "locks held by the ledger with another tool's file at their path (left alone)", rep.Interlopers)
			switch n := len(rep.Recorded); {
			case n == 1:
				termtext.Fprintf(w, "  recorded: lock_projected, seq %d\n", rep.Recorded[0])
			case n > 1:
				termtext.Fprintf(w, "  recorded: %d lock_projected events, seq %d-%d\n", n, rep.Recorded[0], rep.Recorded[n-1])
			}
			termtext.Fprintf(w, "  recorded: ledger_projected, seq %d\n", rep.RunRecorded)
		})
	}, more...)
}

// projectArchives checks project's --archive files, each on its own with
// the keys plain verify trusts.
func projectArchives(ctx context.Context, o *projectOptions) ([]*archive.Checked, error) {
	if len(o.archives) == 0 {
		return nil, nil
	}
	trust, err := (&verifyOptions{g: o.g}).trust(ctx)
	if err != nil {
		return nil, err
	}
	var checked []*archive.Checked
	for _, path := range o.archives {
		f, err := openInput("--archive", path, archiveWhat)
		if err != nil {
			return nil, err
		}
		c, err := checkArchive(f, path, trust)
		f.Close()
		if err != nil {
			return nil, archiveInput(path, err)
		}
		checked = append(checked, c)
	}
	return checked, nil
}

func printNames(w io.Writer, title string, names []string) {
	if len(names) == 0 {
		return
	}
	termtext.Fprintf(w, "  %s:", title)
	for _, n := range names {
		termtext.Fprintf(w, " %s", n)
	}
	fmt.Fprintln(w)
}
