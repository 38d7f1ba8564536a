package fence

import (
	"context"

	"github.com/lockledger/lockledger/ledger"
)

// Record appends the refusal in err (AsStale) to the ledger as
// fence_rejected on lock, with id as the writer whose write was refused
// (its request: LOCKLEDGER_REQUEST_ID, lease.Lease.RequestID). An err that
// holds no refusal records nothing. The write stays refused whatever
// Record returns.
func Record(ctx context.Context, l *ledger.Ledger, lock string, id ledger.Identity, err error) error {
	stale, ok := AsStale(err)
	if !ok {
		return nil
	}
	return l.RecordFenceRejected(ctx, lock, id, stale.Payload())
}
