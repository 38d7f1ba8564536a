package lockcmd

// The loss of a lock that run could not record, because the ledger did not
// answer before run's deadline, is recorded later by a process of its own:
// run must exit at once (its caller must hear of the loss before the lock's
// TTL runs out), while the trace is written as soon as the ledger answers
// again, for up to lossRecordFor.

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

const recordLossCommand = "__record-loss"

// lossRecordFor is how long a lost lock's recorder waits for the ledger.
const lossRecordFor = time.Hour

// recordLossLater starts the recorder of hold's loss, if the ledger has not
// recorded it, and does not wait for it. It passes on the global flags
// given to run (the command), which the recorder needs to open the same
// ledger.
func recordLossLater(g *invocation.Globals, run *cobra.Command, hold *lease.Lease) {
	lost := hold.UnrecordedLoss()
	if lost == nil {
		return
	}
	self, err := os.Executable()
	if err != nil {
		g.Log.Error("cannot record the lost lock later", "lock", hold.Lock(), "err", err)
		return
	}
	args := invocation.GlobalArgs(run)
	acq := hold.Acquisition()
	id := acq.Identity()
	holder := events.HolderOf(acq.Record)
	uid, _ := proc.Self()
	holder.UID = &uid
	hj, err := json.Marshal(holder)
	if err != nil {
		g.Log.Error("cannot record the lost lock later", "lock", hold.Lock(), "err", err)
		return
	}
	args = append(args, recordLossCommand, "--lock", hold.Lock(), "--request-id", id.RequestID, "--actor", id.Actor,
		"--pid", strconv.Itoa(id.PID), "--holder", string(hj), "--failures", strconv.Itoa(max(lost.Failures, 1)), "--error", lost.Error(),
		"--until", time.Now().Add(lossRecordFor).UTC().Format(time.RFC3339Nano))
	// Its own session, and no descriptor of run's: it outlives run by
	// design.
	cmd := proc.Detached(self, args...)
	if err := cmd.Start(); err != nil {
		g.Log.Error("cannot record the lost lock later", "lock", hold.Lock(), "err", err)
		return
	}
	g.Log.Error("the ledger did not answer: the lost lock is recorded once it does", "lock", hold.Lock(),
		"recorder_pid", cmd.Process.Pid, "for", lossRecordFor)
	_ = cmd.Process.Release()
}

var recordLossListing = invocation.Listing{
	Use:    recordLossCommand,
	Hidden: true,
}

func NewRecordLoss(g *invocation.Globals) *cobra.Command {
	var lock, cause, until, holder string
	var id ledger.Identity
	var failures int
	cmd := recordLossListing.Of(&cobra.Command{
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			end, err := time.Parse(time.RFC3339Nano, until)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithDeadline(cmd.Context(), end)
			defer cancel()
			return recordLoss(ctx, g, lock, id, holder, failures, cause)
		},
	})
	fl := cmd.Flags()
	fl.StringVar(&lock, "lock", "", "")
	fl.StringVar(&id.RequestID, "request-id", "", "")
	fl.StringVar(&id.Actor, "actor", "", "")
	fl.IntVar(&id.PID, "pid", 0, "")
	fl.IntVar(&failures, "failures", 1, "")
	fl.StringVar(&cause, "error", "", "")
	fl.StringVar(&until, "until", "", "")
	fl.StringVar(&holder, "holder", "", "")
	return cmd
}

// recordLoss opens the ledger, once it can, and records the loss there:
// written by this process, naming the run's holding (holder, JSON) as
// held_by; from a run that passed no holder, under the run's identity.
func recordLoss(ctx context.Context, g *invocation.Globals, lock string, id ledger.Identity, holder string, failures int, cause string) error {
	var h *events.Holder
	if holder != "" {
		h = new(events.Holder)
		if err := json.Unmarshal([]byte(holder), h); err != nil {
			return events.Invalid("--holder", "", "must be a holder object: "+err.Error())
		}
	}
	return invocation.RetryRecord(ctx, g, invocation.Writes, nil, func(l *ledger.Ledger) error {
		if h != nil {
			return l.RecordLossOf(ctx, lock, ledger.Identity{}, *h, failures, cause)
		}
		return lease.RecordLoss(ctx, l, lock, id, failures, cause)
	})
}
