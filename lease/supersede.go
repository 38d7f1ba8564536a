package lease

import (
	"context"
	"time"

	"github.com/lockledger/lockledger/ledger"
)

// AwaitSuperseded returns once the job this lease took the lock from (with
// WithSupersede) has stopped, and the jobs that one was itself still
// waiting for; what outlives grace plus ledger.SupersedeNoticeMargin is
// killed (see ledger.AwaitSuperseded). A job that cannot be awaited from
// here is named in NotAwaited.
//
// It fails when ctx is done. A lease lost meanwhile (this run superseded in
// turn) keeps waiting, and killing after the grace, all the same: the run
// that took the lock may not be able to await these jobs; the loss is
// returned once they have stopped.
func (s *Lease) AwaitSuperseded(ctx context.Context, grace time.Duration) (ledger.Superseded, error) {
	sup, err := s.l.AwaitSuperseded(ctx, s.acq, grace)
	if err != nil {
		return sup, err
	}
	return sup, s.Err()
}
