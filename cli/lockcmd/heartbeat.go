package lockcmd

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

type heartbeatOptions struct {
	g         *invocation.Globals
	lock      string
	requestID string
}

var heartbeatListing = invocation.Listing{
	Use:   "heartbeat NAME --request-id R",
	Short: "Renew a lock you hold",
}

func NewHeartbeat(g *invocation.Globals) *cobra.Command {
	o := &heartbeatOptions{g: g}
	cmd := heartbeatListing.Of(&cobra.Command{
		Long: `Move the lock's last_heartbeat_at to now. Exit 5 when request R does not
hold the lock. If R held it and had it taken away (stolen or superseded,
displaced by another tool's lock file, released with --force), that is a
lost lock: heartbeat_failed with lock_lost is recorded. If R never held it (a mistyped request id or lock
name) or released it itself, nothing was lost: the message says which
("never held it", "released it at seq N") and the refusal is recorded as
action_refused.`,
		Example: `  while sleep 60; do lockledger heartbeat deploy-prod --request-id "$rid" || break; done`,
		Args:    invocation.ExactlyOneLock,
		RunE:    invocation.OnLock(&o.lock, o.run),
	})
	cmd.Flags().StringVar(&o.requestID, "request-id", "", "the request id acquire printed (required)")
	return cmd
}

func (o *heartbeatOptions) run(ctx context.Context) error {
	if o.requestID == "" {
		return events.Invalid("--request-id", "", "is required")
	}
	if err := events.ValidateRequestID(o.requestID); err != nil {
		return err
	}
	return o.g.Using(ctx, invocation.Writes, func(l *ledger.Ledger) error {
		a, err := l.Heartbeat(ctx, o.lock, ledger.Identity{RequestID: o.requestID, PID: os.Getppid()})
		if err != nil {
			return err
		}
		if o.g.JSON {
			obj := acquisitionObject(a)
			obj.Status = "heartbeat"
			invocation.WriteJSON(o.g.IO.Out, obj)
		}
		o.g.Log.Debug("heartbeat", "lock", o.lock, "at", a.Record.LastHeartbeatAt)
		return nil
	})
}
