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
//
// Record writes in the caller's process: a caller killed before it
// returns (a run's job whose run found its lock lost and stops the job's
// process group) loses the record. Such a caller uses lockledger fence
// write, or RecordDetached, whose recorder is out of its process group
// and session.
func Record(ctx context.Context, l *ledger.Ledger, lock string, id ledger.Identity, err error) error {
	stale, ok := AsStale(err)
	if !ok {
		return nil
	}
	return l.RecordFenceRejected(ctx, lock, id, stale.Payload())
}
